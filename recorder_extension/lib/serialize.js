/*
 * Page serialisation of the content script: one walk over a document that stamps stable uids, writes the
 * HTML the server stores and lists the elements whose boxes lib/dom.js measures; private data is masked on the
 * way (lib/privacy.js). No chrome.* APIs (node tests run this on jsdom). Classic script: defines
 * globalThis.WebTasks.serialize (and module.exports for node); lib/dom.js is its public face.
 *
 * Conventions (the stored page is what reviewers, exporters and evaluators read):
 *  - uid: every element of the document, of its open shadow roots and of its same-origin iframes carries
 *    data-webtasks-id. The attribute stays on the live element, so the same element keeps its uid across
 *    captures of the page; new elements get new uids; a page's clone of a stamped element gets a new one.
 *    <script>/<noscript> and <meta http-equiv> are not stamped: they are dropped from the page.
 *  - Form state is written as attributes: input value → value="…", checked → checked="", the selected
 *    <option> → selected="", a <textarea>'s current value as its text.
 *  - Dropped: <script>, <noscript>, <meta http-equiv> (refresh, CSP), inline handlers (on* attributes),
 *    comments, and the content of the page's own <template> elements (inert markup, not rendered).
 *  - A shadow root is written as the host's first child: <template shadowrootmode="open|closed"
 *    data-webtasks-id="<host uid>:shadow">…</template> (declarative shadow DOM: a browser rendering the page
 *    re-attaches it; lxml sees its elements). The synthetic template has a uid but no bbox entry.
 *  - A same-origin iframe's document is serialised (same rules, recursively) into the iframe's srcdoc
 *    attribute, written with SINGLE quotes (srcdoc='…'): inside it the uids keep their plain form
 *    data-webtasks-id="…", so a text search of the page finds every uid. (HTML parsers such as lxml do not
 *    parse attribute text: elements of frames are in the bboxes but not in the page's element tree.)
 *    Cross-origin iframes are written as they are (their own content script captures their actions).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const privacy = W.privacy || require("./privacy.js");
  const { NONE, VALUE, SUBTREE, SAFE_ATTRIBUTES, isSensitiveInput, startsPrivateSubtree, levelOf, inheritedLevel, maskValue, frameDocument } = privacy;

  const UID = C.UID_ATTRIBUTE;
  const PRIVATE = C.PRIVATE_ATTRIBUTE;
  const OUTER_HTML_MAX = C.TIMING.OUTER_HTML_MAX;

  const DROPPED = new Set(["script", "noscript"]);
  const VOID = new Set([
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input", "keygen",
    "link", "meta", "param", "source", "track", "wbr",
  ]);
  const RAW_TEXT = new Set(["style", "xmp", "iframe", "noembed", "noframes", "plaintext"]);
  const HTML_NS = "http://www.w3.org/1999/xhtml";
  const ATTRIBUTE_NAME = /^[^\s"'>/=]+$/;

  // --- uids ----------------------------------------------------------------------------------------------

  /** A random uuid (v4); crypto.randomUUID only exists in secure contexts, so http pages need the fallback. */
  function newUid() {
    const crypto = root.crypto;
    if (crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
    const bytes = new Uint8Array(16);
    if (crypto && crypto.getRandomValues) crypto.getRandomValues(bytes);
    else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  // Element uids: unique in the page, short (they are written twice per element per action: in the page HTML
  // and as the bboxes key). This script's random prefix (6 base-36 characters, new per content-script load)
  // and a counter: "k3x9qa" + "1b" → "k3x9qa1b" (8 characters for 2,000 elements). Another script in the
  // page (a same-origin frame's, a re-injected one) has another prefix; 36^6 ≈ 2·10^9 prefixes.
  const UID_PREFIX = randomBase36(6);
  let uidCounter = 0;

  function randomBase36(length) {
    const bytes = new Uint8Array(length);
    const crypto = root.crypto;
    if (crypto && crypto.getRandomValues) crypto.getRandomValues(bytes);
    else for (let i = 0; i < length; i++) bytes[i] = Math.floor(Math.random() * 256);
    let text = "";
    for (let i = 0; i < length; i++) text += (bytes[i] % 36).toString(36);
    return text;
  }

  /** A new element uid (see UID_PREFIX). Turn ids (client_id) stay uuids: newUid. */
  function newElementUid() {
    uidCounter += 1;
    return UID_PREFIX + uidCounter.toString(36);
  }

  // uid → the element that owns it. Pages clone nodes (templates, virtual DOMs) and the clone copies our
  // attribute: the first element seen with a uid keeps it while it is still in the page with that uid.
  const owners = new Map();
  // element → the uid it was confirmed or stamped with: the fast path of every later capture.
  const confirmed = new WeakMap();

  /** The element's uid, stamping a new one when it has none or its uid belongs to another element. */
  function ensureUid(el) {
    let uid = el.getAttribute(UID);
    if (uid) {
      if (confirmed.get(el) === uid) return uid;
      const ref = owners.get(uid);
      const owner = ref && ref.deref();
      if (owner === el || !owner || !owner.isConnected || owner.getAttribute(UID) !== uid) {
        owners.set(uid, new WeakRef(el));
        confirmed.set(el, uid);
        return uid;
      }
    }
    uid = newElementUid();
    el.setAttribute(UID, uid);
    owners.set(uid, new WeakRef(el));
    confirmed.set(el, uid);
    return uid;
  }

  // --- attributes ----------------------------------------------------------------------------------------

  function isCheckable(type) {
    return type === "checkbox" || type === "radio";
  }

  function inputType(el, name) {
    return name === "input" ? String(el.type || "text").toLowerCase() : "";
  }

  /** Whether a page attribute is stored as it is (form state is written from the live element instead). */
  function keepAttribute(key, name, type, level) {
    if (key.length > 2 && (key[0] === "o" || key[0] === "O") && (key[1] === "n" || key[1] === "N")) return false;
    if (level === SUBTREE && !SAFE_ATTRIBUTES.has(key)) return false;
    if (type && (isCheckable(type) ? key === "checked" : key === "value")) return false;
    if (name === "option" && key === "selected") return false;
    return ATTRIBUTE_NAME.test(key);
  }

  const NO_PAIRS = [];

  /** The live form state as [name, value] pairs: value (masked when private), checked, selected. */
  function formState(el, name, type, level) {
    if (type) {
      if (isCheckable(type)) return level !== SUBTREE && el.checked ? [["checked", ""]] : NO_PAIRS;
      if (type === "file") return NO_PAIRS; // C:\fakepath\<name>: nothing a page can render
      const value = el.value;
      return value ? [["value", level === NONE ? value : maskValue(value)]] : NO_PAIRS;
    }
    return name === "option" && level !== SUBTREE && el.selected ? [["selected", ""]] : NO_PAIRS;
  }

  /** [name, value] pairs as stored: on* dropped, form state as attributes, private values masked. */
  function attributePairs(el, level) {
    const name = el.localName;
    const type = inputType(el, name);
    const out = [];
    const keys = el.getAttributeNames();
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (keepAttribute(key, name, type, level)) out.push([key, el.getAttribute(key)]);
    }
    return out.concat(formState(el, name, type, level));
  }

  /**
   * The same pairs written as HTML (the serialiser's hot path: no intermediate arrays; getAttributeNames and
   * getAttribute are half the cost of el.attributes, whose Attr objects the engine creates on first use).
   */
  function attributesHtml(el, name, level, skipSrcdoc) {
    const type = inputType(el, name);
    let html = "";
    const keys = el.getAttributeNames();
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (skipSrcdoc && key === "srcdoc") continue;
      if (keepAttribute(key, name, type, level)) html += ` ${key}="${escapeAttribute(el.getAttribute(key))}"`;
    }
    if (type || name === "option") {
      for (const [key, value] of formState(el, name, type, level)) html += ` ${key}="${escapeAttribute(value)}"`;
    }
    return html;
  }

  // --- serialisation -------------------------------------------------------------------------------------

  const TEXT_SPECIAL = /[&<>\u00a0]/;
  const ATTR_SPECIAL = /[&"\u00a0]/;
  const SRCDOC_SPECIAL = /[&']/;

  function escapeText(text) {
    if (!TEXT_SPECIAL.test(text)) return text;
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/\u00a0/g, "&nbsp;");
  }

  function escapeAttribute(value) {
    if (!ATTR_SPECIAL.test(value)) return value;
    return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/\u00a0/g, "&nbsp;");
  }

  /** For srcdoc='…': double quotes stay as they are, so uids inside read data-webtasks-id="…". */
  function escapeSrcdoc(html) {
    if (!SRCDOC_SPECIAL.test(html)) return html;
    return html.replace(/&/g, "&amp;").replace(/'/g, "&#39;");
  }

  // CSS-in-JS libraries insert rules with insertRule into an empty <style>: keep the rules, not the empty text.
  const sheetTexts = new WeakMap();

  function sheetText(sheet) {
    if (!sheet) return "";
    try {
      const rules = sheet.cssRules;
      const cached = sheetTexts.get(sheet);
      if (cached && cached.count === rules.length) return cached.text;
      let text = "";
      for (let i = 0; i < rules.length; i++) text += rules[i].cssText + "\n";
      text = text.replace(/<\/style/gi, "<\\/style");
      sheetTexts.set(sheet, { count: rules.length, text });
      return text;
    } catch (err) {
      return "";
    }
  }

  function defaultShadowRoot(el) {
    return el.shadowRoot || null;
  }

  /**
   * One walk over a document (or element) that stamps uids, writes the HTML (when `out`) and lists the
   * elements to measure (when `entries`). Layout is only read after the walk (measure), so stamping a new
   * uid never forces a style recalculation between two getBoundingClientRect calls.
   */
  function newWalk(policy, opts, { out = true, entries = false, limit = Infinity, stamp = true } = {}) {
    return {
      policy,
      query: `[${PRIVATE}]` + (policy.selector ? `, ${policy.selector}` : ""),
      matched: new Set(), // elements starting a private subtree, found per scope by enterScope
      shadowRootOf: (opts && opts.shadowRootOf) || defaultShadowRoot,
      out, // write the HTML (into `html`, one string: appending is cheaper than an array of parts and a join)
      html: "",
      size: 0,
      limit,
      stamp,
      // what measure() reads, as parallel arrays
      els: entries ? [] : null,
      uids: [],
      frameOf: [],
      levels: [],
      frames: [{ iframe: null, parent: -1 }],
      privateValues: [], // what private fields hold (collectPrivateValue): for the worker's redaction, never stored
    };
  }

  // Inputs whose value is not something a person types (a label, a file name, a fixed value).
  const UNTYPED = new Set(["checkbox", "radio", "file", "submit", "button", "reset", "image", "hidden"]);

  /**
   * The value a private element holds, kept in the walk: the service worker masks it wherever it shows up later (a
   * GET form puts it in the next page's URL; lib/redact.js). Typed-in fields (input, textarea) and the <option> a
   * private <select> was changed to (its value and text; not the page's default choice, a "none" or "Choose…" that
   * would be masked in every word and style rule that contains it).
   */
  function collectPrivateValue(el, name, walk) {
    const values = walk.privateValues;
    if (name === "textarea" || (name === "input" && !UNTYPED.has(inputType(el, name)))) {
      if (el.value) values.push(el.value);
    } else if (name === "option" && el.selected && !isDefaultOption(el)) {
      if (el.value) values.push(el.value);
      if (el.text && el.text.trim()) values.push(el.text.trim());
    }
  }

  /** Whether a selected option is the one its <select> shows before anyone chooses (HTML's selectedness rules). */
  function isDefaultOption(option) {
    let select = option.parentNode;
    if (select && select.localName === "optgroup") select = select.parentNode;
    if (!select || select.localName !== "select" || select.multiple) return option.defaultSelected;
    let shown = null;
    for (const o of select.options) if (o.defaultSelected) shown = o; // the last one marked selected
    if (!shown) for (const o of select.options) if (!o.disabled) { shown = o; break; } // else the first enabled
    return option === shown;
  }

  /** Find the elements starting a private subtree of a scope (document, shadow root or element subtree) with
   *  one querySelectorAll, instead of matching every element against the selectors. */
  function enterScope(scope, walk) {
    const found = scope.querySelectorAll(walk.query);
    for (let i = 0; i < found.length; i++) walk.matched.add(found[i]);
  }

  function push(walk, text) {
    walk.html += text;
    walk.size += text.length;
  }

  function writeDocument(doc, walk, level, frame) {
    enterScope(doc, walk);
    if (walk.out && doc.doctype) push(walk, `<!DOCTYPE ${doc.doctype.name || "html"}>`);
    for (let n = doc.firstChild; n; n = n.nextSibling) if (n.nodeType === 1) writeElement(n, walk, level, frame);
  }

  function writeChildren(parent, walk, level, frame, raw) {
    for (let n = parent.firstChild; n && walk.size <= walk.limit; n = n.nextSibling) {
      if (n.nodeType === 1) writeElement(n, walk, level, frame);
      else if (n.nodeType === 3 && walk.out && level !== SUBTREE) push(walk, raw ? n.data : escapeText(n.data));
    }
  }

  function writeShadow(shadow, walk, level, frame) {
    enterScope(shadow, walk);
    writeChildren(shadow, walk, level, frame, false);
  }

  function writeElement(el, walk, inherited, frame) {
    const name = el.localName;
    if (DROPPED.has(name) || (name === "meta" && el.hasAttribute("http-equiv"))) return;
    let level = inherited === SUBTREE || walk.matched.has(el) ? SUBTREE : NONE;
    if (level === NONE && name === "input" && isSensitiveInput(el)) level = VALUE;
    if (level !== NONE && (name === "input" || name === "textarea" || name === "option")) collectPrivateValue(el, name, walk);
    const uid = walk.stamp ? ensureUid(el) : el.getAttribute(UID);
    if (walk.els && uid) {
      walk.els.push(el);
      walk.uids.push(uid);
      walk.frameOf.push(frame);
      walk.levels.push(level);
    }
    const childLevel = level === SUBTREE ? SUBTREE : NONE;
    const isFrame = name === "iframe";
    const childDoc = isFrame ? frameDocument(el) : null;
    let srcdoc = null;
    if (childDoc && childDoc.documentElement) srcdoc = writeFrame(el, childDoc, walk, childLevel, frame);
    const shadow = walk.shadowRootOf(el);
    if (!walk.out) {
      if (shadow) writeShadow(shadow, walk, childLevel, frame);
      if (name !== "template") writeChildren(el, walk, childLevel, frame, false);
      return;
    }
    let tag = "<" + name + attributesHtml(el, name, level, srcdoc !== null);
    if (srcdoc !== null) tag += ` srcdoc='${escapeSrcdoc(srcdoc)}'`;
    push(walk, tag + ">");
    if (VOID.has(name) && el.namespaceURI === HTML_NS) return;
    if (shadow) {
      push(walk, `<template shadowrootmode="${shadow.mode === "closed" ? "closed" : "open"}" ${UID}="${uid}:shadow">`);
      writeShadow(shadow, walk, childLevel, frame);
      push(walk, "</template>");
    }
    if (name === "textarea") {
      push(walk, escapeText(level === NONE ? el.value : maskValue(el.value)));
    } else if (name === "style" && childLevel === NONE && !el.textContent.trim()) {
      push(walk, sheetText(el.sheet));
    } else if (name !== "template" && !isFrame) {
      writeChildren(el, walk, childLevel, frame, RAW_TEXT.has(name) && el.namespaceURI === HTML_NS);
    }
    push(walk, `</${name}>`);
  }

  /** Walk a same-origin frame's document: its HTML (for srcdoc) and its elements under a new frame index. */
  function writeFrame(iframe, doc, walk, level, parentFrame) {
    walk.frames.push({ iframe, parent: parentFrame });
    const index = walk.frames.length - 1;
    if (!walk.out) {
      writeDocument(doc, walk, level, index);
      return null;
    }
    const outer = walk.html;
    const outerSize = walk.size;
    walk.html = "";
    writeDocument(doc, walk, level, index);
    const html = walk.html;
    walk.html = outer;
    walk.size = outerSize; // the frame's HTML is counted once, when the iframe tag with its srcdoc is written
    return html;
  }

  function walkRoot(node, walk) {
    const policy = walk.policy;
    if (node.nodeType === 9) writeDocument(node, walk, NONE, 0);
    else if (node.nodeType === 1) {
      enterScope(node, walk);
      if (startsPrivateSubtree(node, policy)) walk.matched.add(node);
      writeElement(node, walk, inheritedLevel(node, policy), 0);
    } else if (node.nodeType === 11) {
      writeShadow(node, walk, node.host ? inheritedLevel(node.host, policy) : NONE, 0);
    }
  }

  /** The element's HTML (its children's only, for innerHTML) as the page writes it, capped at OUTER_HTML_MAX. */
  function serializeElement(el, inherited, policy, opts, childrenOnly) {
    const walk = newWalk(policy, opts, { limit: OUTER_HTML_MAX });
    enterScope(el, walk);
    if (startsPrivateSubtree(el, policy)) walk.matched.add(el);
    if (childrenOnly) {
      const level = levelOf(el, inherited, policy);
      if (el.localName === "textarea") push(walk, escapeText(level === NONE ? el.value : maskValue(el.value)));
      else writeChildren(el, walk, level === SUBTREE ? SUBTREE : NONE, 0, RAW_TEXT.has(el.localName));
    } else {
      writeElement(el, walk, inherited, 0);
    }
    return walk.html.slice(0, OUTER_HTML_MAX);
  }

  const api = {
    DROPPED, newUid, newElementUid, ensureUid, attributePairs, defaultShadowRoot, newWalk, walkRoot,
    serializeElement,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.serialize = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
