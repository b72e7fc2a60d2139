/*
 * Pure DOM functions of the content script: stable uids, page serialisation, element boxes, the acted
 * element's WebLINX `element` object, and privacy masking. No chrome.* APIs (node tests run this on jsdom).
 *
 * Classic script: defines globalThis.WebTasks.dom (and module.exports for node).
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
 *  - Boxes: getBoundingClientRect in CSS px of the top viewport (as WebLINX); elements of same-origin
 *    iframes are translated by the iframe's content-box offset; `opts.offset` adds the offset of the
 *    captured document itself when it is a cross-origin frame (learnt from the parent by message).
 *  - xpath: from the document root, one step per element, `name[k]` (1-based among same-name siblings)
 *    only when the parent has several children of that name, lower-case names (/html/body/div[2]/a).
 *    Across boundaries: `<host xpath>/#shadow-root/<path in the shadow root>` and
 *    `<iframe xpath>/#document/html/body/…` for same-origin frames; in a cross-origin frame, the path is
 *    from that frame's own document.
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
  const OUTER_HTML_MAX = C.TIMING.OUTER_HTML_MAX;
  const TEXT_CONTENT_MAX = 10000; // textContent of a click on <body> would otherwise be the whole page

  const NONE = 0;
  const VALUE = 1; // only the element's value is secret (password)
  const SUBTREE = 2; // the element and everything in it is secret (data-private, configured selectors)

  const DROPPED = new Set(["script", "noscript"]);
  const VOID = new Set([
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input", "keygen",
    "link", "meta", "param", "source", "track", "wbr",
  ]);
  const RAW_TEXT = new Set(["style", "xmp", "iframe", "noembed", "noframes", "plaintext"]);
  const HTML_NS = "http://www.w3.org/1999/xhtml";
  // Attributes kept on elements of a private subtree: enough to render the layout, nothing a user typed.
  const SAFE_ATTRIBUTES = new Set([
    UID, PRIVATE, "id", "class", "style", "type", "role", "hidden", "disabled", "tabindex", "width", "height",
    "colspan", "rowspan", "dir", "contenteditable",
  ]);
  const SENSITIVE_AUTOCOMPLETE = new Set([
    "current-password", "new-password", "one-time-code", "cc-number", "cc-csc", "cc-exp", "cc-exp-month",
    "cc-exp-year",
  ]);
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

  // --- privacy -------------------------------------------------------------------------------------------

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
    };
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

  // --- boxes ---------------------------------------------------------------------------------------------

  /** A WebLINX box from a DOMRect moved by (dx, dy). Four getters, not eight: for 2,000 elements the
   *  DOMRect getters are a third of a capture's time. */
  /** Hundredths of a CSS pixel: more than any consumer needs, and far fewer bytes than layout's 1/64 px floats. */
  function px(value) {
    return Math.round(value * 100) / 100;
  }

  function makeBox(rect, dx, dy) {
    const left = px(rect.left + dx);
    const top = px(rect.top + dy);
    const width = px(rect.width);
    const height = px(rect.height);
    return { x: left, y: top, width, height, top, right: px(left + width), bottom: px(top + height), left };
  }

  /** Where an iframe's content (its viewport) starts, in its parent's viewport: border box + border + padding. */
  function contentOffset(iframe) {
    const rect = iframe.getBoundingClientRect();
    let paddingLeft = 0;
    let paddingTop = 0;
    try {
      const style = iframe.ownerDocument.defaultView.getComputedStyle(iframe);
      paddingLeft = parseFloat(style.paddingLeft) || 0;
      paddingTop = parseFloat(style.paddingTop) || 0;
    } catch (err) {
      // no computed style (detached): the border box is close enough
    }
    return { x: rect.left + (iframe.clientLeft || 0) + paddingLeft, y: rect.top + (iframe.clientTop || 0) + paddingTop };
  }

  /** Offset of `doc`'s viewport in the topmost same-origin document's viewport (0,0 for that document). */
  function offsetToRoot(doc) {
    let x = 0;
    let y = 0;
    for (let iframe = frameElementOf(doc); iframe; iframe = frameElementOf(iframe.ownerDocument)) {
      const o = contentOffset(iframe);
      x += o.x;
      y += o.y;
    }
    return { x, y };
  }

  function baseOffset(opts) {
    const o = opts && opts.offset;
    return { x: (o && Number(o.x)) || 0, y: (o && Number(o.y)) || 0 };
  }

  function viewportOf(doc, opts) {
    const v = opts && opts.viewport;
    if (v && v.width > 0 && v.height > 0) return v;
    const view = doc.defaultView || {};
    return { width: view.innerWidth || 0, height: view.innerHeight || 0 };
  }

  function intersectsViewport(box, viewport) {
    return box.width > 0 && box.height > 0 && box.right > 0 && box.bottom > 0 &&
      box.left < viewport.width && box.top < viewport.height;
  }

  /** Read every listed element's box (after the walk): bboxes by uid, and the boxes of private elements. */
  function measure(walk, doc, opts) {
    const base = baseOffset(opts);
    const offsets = [];
    for (let i = 0; i < walk.frames.length; i++) {
      const f = walk.frames[i];
      if (f.parent < 0) offsets.push(base);
      else {
        const o = contentOffset(f.iframe);
        offsets.push({ x: offsets[f.parent].x + o.x, y: offsets[f.parent].y + o.y });
      }
    }
    const viewport = viewportOf(doc, opts);
    const bboxes = {};
    const privateRects = [];
    for (let i = 0; i < walk.els.length; i++) {
      const o = offsets[walk.frameOf[i]];
      const box = makeBox(walk.els[i].getBoundingClientRect(), o.x, o.y);
      bboxes[walk.uids[i]] = box;
      if (walk.levels[i] !== NONE && intersectsViewport(box, viewport)) {
        privateRects.push({ x: box.x, y: box.y, width: box.width, height: box.height });
      }
    }
    return { bboxes, privateRects };
  }

  // --- public API ----------------------------------------------------------------------------------------

  /** Stamp a uid on every element under `node` (document, element or shadow root), shadow roots and
   *  same-origin iframes included. Returns `node`. */
  function stampUids(node, opts) {
    walkRoot(node, newWalk(policyFor(opts, node), opts, { out: false }));
    return node;
  }

  /**
   * Everything a capture needs, in one walk: {html, bboxes, privateRects}. opts: {privateSelectors,
   * shadowRootOf (default el.shadowRoot: open roots; chrome.dom.openOrClosedShadowRoot would add closed ones
   * at ≈5 ms per 2,000 elements), offset (of this document in the top viewport, for cross-origin frames),
   * viewport ({width, height} of the top viewport, to keep only visible private rects)}.
   */
  function capturePage(doc, opts) {
    const walk = newWalk(policyFor(opts, doc), opts, { entries: true });
    walkRoot(doc, walk);
    const html = walk.html;
    const { bboxes, privateRects } = measure(walk, doc, opts);
    return { html, bboxes, privateRects };
  }

  /** The page's HTML with uids, form state as attributes, scripts dropped and private data masked. */
  function serializePage(doc, opts) {
    const walk = newWalk(policyFor(opts, doc), opts);
    walkRoot(doc, walk);
    return walk.html;
  }

  /** {uid: {x, y, width, height, top, right, bottom, left}} of every element (top-viewport CSS px). */
  function boundingBoxes(doc, opts) {
    const walk = newWalk(policyFor(opts, doc), opts, { out: false, entries: true });
    walkRoot(doc, walk);
    return measure(walk, doc, opts).bboxes;
  }

  /** [{x, y, width, height}] of the private elements visible in the viewport, to black out of screenshots. */
  function privateRects(doc, opts) {
    const walk = newWalk(policyFor(opts, doc), opts, { out: false, entries: true });
    walkRoot(doc, walk);
    return measure(walk, doc, opts).privateRects;
  }

  function xpathStep(el) {
    const name = el.localName.toLowerCase();
    const parent = el.parentNode;
    let count = 0;
    let index = 1;
    if (parent && parent.firstElementChild !== undefined) {
      for (let s = parent.firstElementChild; s; s = s.nextElementSibling) {
        if (s.localName.toLowerCase() !== name) continue;
        count += 1;
        if (s === el) index = count;
      }
    }
    return count > 1 ? `${name}[${index}]` : name;
  }

  /** The element's xpath (see the conventions at the top for shadow roots and frames). */
  function xpathOf(el) {
    const steps = [];
    let node = el;
    for (;;) {
      steps.unshift(xpathStep(node));
      const parent = node.parentNode;
      if (!parent) return "/" + steps.join("/");
      if (parent.nodeType === 11) {
        return parent.host ? `${xpathOf(parent.host)}/#shadow-root/${steps.join("/")}` : "/" + steps.join("/");
      }
      if (parent.nodeType === 9) {
        const iframe = frameElementOf(parent);
        return (iframe ? `${xpathOf(iframe)}/#document/` : "/") + steps.join("/");
      }
      node = parent;
    }
  }

  /** Text of the element without private subtrees, scripts and styles; trimmed and capped. */
  function textOf(el, level, policy) {
    if (level === SUBTREE) return "";
    let text = "";
    (function collect(node) {
      for (let n = node.firstChild; n && text.length < TEXT_CONTENT_MAX; n = n.nextSibling) {
        if (n.nodeType === 3) text += n.data;
        else if (n.nodeType === 1 && !DROPPED.has(n.localName) && n.localName !== "style" &&
          !startsPrivateSubtree(n, policy)) collect(n);
      }
    })(el);
    return text.trim().slice(0, TEXT_CONTENT_MAX);
  }

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

  /**
   * The acted element as WebLINX stores it: {attributes, bbox, tagName, textContent, innerHTML, outerHTML,
   * xpath}, masked like the page. bbox is in the top viewport (same-origin frames translated, plus
   * opts.offset for a cross-origin frame).
   */
  function elementInfo(el, opts) {
    const policy = policyFor(opts, el);
    const uid = ensureUid(el);
    const inherited = inheritedLevel(el, policy);
    const level = levelOf(el, inherited, policy);
    const attributes = {};
    for (const [key, value] of attributePairs(el, level)) attributes[key] = value;
    attributes[UID] = uid;
    const frame = offsetToRoot(el.ownerDocument);
    const base = baseOffset(opts);
    return {
      attributes,
      bbox: makeBox(el.getBoundingClientRect(), frame.x + base.x, frame.y + base.y),
      tagName: String(el.tagName).toUpperCase(),
      textContent: textOf(el, level, policy),
      innerHTML: serializeElement(el, inherited, policy, opts, true),
      outerHTML: serializeElement(el, inherited, policy, opts, false),
      xpath: xpathOf(el),
    };
  }

  /** Every iframe element of a document, in shadow roots too (to answer a child frame asking for its offset). */
  function frameElements(doc, opts) {
    const found = [];
    const shadowRootOf = (opts && opts.shadowRootOf) || defaultShadowRoot;
    (function collect(node) {
      for (let n = node.firstElementChild; n; n = n.nextElementSibling) {
        if (n.localName === "iframe" || n.localName === "frame") found.push(n);
        const shadow = shadowRootOf(n);
        if (shadow) collect(shadow);
        collect(n);
      }
    })(doc);
    return found;
  }

  /** The private elements of a document's light DOM (to test whether a text selection touches one). */
  function privateElements(doc, opts) {
    const policy = policyFor(opts, doc);
    const selector = `[${PRIVATE}], input[type=password]` + (policy.selector ? `, ${policy.selector}` : "");
    return Array.from(doc.querySelectorAll(selector));
  }

  const api = {
    MASK, NONE, VALUE, SUBTREE, TEXT_CONTENT_MAX,
    newUid, newElementUid, ensureUid, stampUids, serializePage, boundingBoxes, capturePage, privateRects,
    elementInfo, isPrivate, privacyLevel, maskValue, xpathOf, contentOffset, offsetToRoot, frameElements,
    privateElements,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.dom = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
