/*
 * The content script's privacy policy: which elements of a page are secret, and how a secret is masked.
 * lib/serialize.js and lib/dom.js apply it to everything they write. No chrome.* APIs (node tests run this on
 * jsdom). Classic script: defines globalThis.WebTasks.privacy (and module.exports for node).
 *
 * Privacy (the stored bytes must never contain a secret):
 *  - PRIVATE SUBTREE: an element with data-private, or matching one of the configured selectors, and all
 *    its descendants (across shadow roots and same-origin iframes): no text at all (text nodes dropped,
 *    textContent ""), no form state, and only structural attributes (SAFE_ATTRIBUTES: uid, id, class, style,
 *    type, role, …); every input/textarea value in it is masked.
 *  - PRIVATE VALUE: a password input (also once it was a password, after a "show password" toggle) and
 *    inputs whose autocomplete is a credential or card field: only the value is masked.
 *  - A masked value is MASK ("********") when the field is not empty and "" when it is, so a reviewer sees
 *    that something was typed but neither the text nor its length.
 */
(function (root) {
  "use strict";

  const C = (root.WebTasks && root.WebTasks.C) || require("./constants.js");

  const UID = C.UID_ATTRIBUTE;
  const PRIVATE = C.PRIVATE_ATTRIBUTE;
  const MASK = "********";

  const NONE = 0;
  const VALUE = 1; // only the element's value is secret (password)
  const SUBTREE = 2; // the element and everything in it is secret (data-private, configured selectors)

  // Attributes kept on elements of a private subtree: enough to render the layout, nothing a user typed.
  const SAFE_ATTRIBUTES = new Set([
    UID, PRIVATE, "id", "class", "style", "type", "role", "hidden", "disabled", "tabindex", "width", "height",
    "colspan", "rowspan", "dir", "contenteditable",
  ]);
  const SENSITIVE_AUTOCOMPLETE = new Set([
    "current-password", "new-password", "one-time-code", "cc-number", "cc-csc", "cc-exp", "cc-exp-month",
    "cc-exp-year",
  ]);

  const policies = new Map();

  /** The configured private selectors as one selector list, invalid ones dropped (with a warning). */
  function policyFor(opts, node) {
    let list = (opts && opts.privateSelectors) || [];
    if (typeof list === "string") list = list.split(/\n/);
    const selectors = list.map((s) => String(s).trim()).filter(Boolean);
    const key = selectors.join("\n");
    let policy = policies.get(key);
    if (!policy) {
      const probe = node && (node.nodeType === 9 ? node : node.ownerDocument);
      const valid = selectors.filter((s) => isValidSelector(s, probe));
      policy = { selector: valid.length ? valid.join(", ") : null };
      policies.set(key, policy);
    }
    return policy;
  }

  function isValidSelector(selector, doc) {
    if (!doc) return true;
    try {
      doc.createDocumentFragment().querySelector(selector);
      return true;
    } catch (err) {
      console.warn(`[webtasks] ignoring invalid private selector ${JSON.stringify(selector)}`);
      return false;
    }
  }

  const everPassword = new WeakSet(); // a "show password" toggle turns the field into type=text

  function isSensitiveInput(el) {
    if (el.localName !== "input") return false;
    if (String(el.type).toLowerCase() === "password") {
      everPassword.add(el);
      return true;
    }
    if (everPassword.has(el)) return true;
    const autocomplete = el.getAttribute("autocomplete");
    if (!autocomplete) return false;
    const tokens = autocomplete.trim().toLowerCase().split(/\s+/);
    return SENSITIVE_AUTOCOMPLETE.has(tokens[tokens.length - 1]);
  }

  function startsPrivateSubtree(el, policy) {
    return el.hasAttribute(PRIVATE) || (policy.selector !== null && el.matches(policy.selector));
  }

  /** The element's own level, given its parent's (a private subtree is inherited, a private value is not). */
  function levelOf(el, inherited, policy) {
    if (inherited === SUBTREE || startsPrivateSubtree(el, policy)) return SUBTREE;
    return isSensitiveInput(el) ? VALUE : NONE;
  }

  /** The document a same-origin iframe shows, or null (cross-origin, not loaded). */
  function frameDocument(iframe) {
    try {
      return iframe.contentDocument || null;
    } catch (err) {
      return null;
    }
  }

  /** The iframe element showing `doc` in a same-origin parent, or null (top document, cross-origin parent). */
  function frameElementOf(doc) {
    try {
      const view = doc.defaultView;
      return (view && view.frameElement) || null;
    } catch (err) {
      return null;
    }
  }

  /** The parent element across shadow-root and same-origin frame boundaries. */
  function composedParent(node) {
    const parent = node.parentNode;
    if (!parent) return null;
    if (parent.nodeType === 11) return parent.host || null;
    if (parent.nodeType === 9) return frameElementOf(parent);
    return parent;
  }

  function inheritedLevel(el, policy) {
    for (let a = composedParent(el); a; a = composedParent(a)) {
      if (a.nodeType === 1 && startsPrivateSubtree(a, policy)) return SUBTREE;
    }
    return NONE;
  }

  /** NONE, VALUE or SUBTREE for an element, looking at its ancestors (shadow hosts and frames included). */
  function privacyLevel(el, opts) {
    const policy = policyFor(opts, el);
    return levelOf(el, inheritedLevel(el, policy), policy);
  }

  /** Whether anything of the element must be masked: password-like input, data-private, configured selectors. */
  function isPrivate(el, opts) {
    return privacyLevel(el, opts) !== NONE;
  }

  /** MASK for a non-empty secret, "" for an empty one: the text and its length never leave the page. */
  function maskValue(value) {
    return value ? MASK : "";
  }

  /**
   * The private elements of a document, its open shadow trees included: the roots of private subtrees and the
   * private-value inputs (password, once a password, credential autocomplete). To test whether a text selection
   * touches one, and whether a page holds any (step mode keeps an MHTML copy of a page only without). Walks the
   * whole document for shadow roots: ask for it when needed, not with every capture. opts: {privateSelectors,
   * shadowRootOf?}.
   */
  function privateElements(doc, opts) {
    const policy = policyFor(opts, doc);
    const selector = `[${PRIVATE}], input` + (policy.selector ? `, ${policy.selector}` : "");
    const shadowRootOf = (opts && opts.shadowRootOf) || ((el) => el.shadowRoot || null);
    const found = [];
    (function visit(root) {
      for (const el of root.querySelectorAll(selector)) {
        if (el.localName !== "input" || startsPrivateSubtree(el, policy) || isSensitiveInput(el)) found.push(el);
      }
      for (const el of root.querySelectorAll("*")) {
        const shadow = shadowRootOf(el);
        if (shadow) visit(shadow);
      }
    })(doc);
    return found;
  }

  const api = {
    MASK, NONE, VALUE, SUBTREE, SAFE_ATTRIBUTES, SENSITIVE_AUTOCOMPLETE,
    policyFor, isSensitiveInput, startsPrivateSubtree, levelOf, inheritedLevel, privacyLevel, isPrivate, maskValue,
    privateElements, frameDocument, frameElementOf,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.privacy = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
