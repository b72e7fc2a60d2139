/*
 * Pure DOM functions of the content script: stable uids, page serialisation, element boxes, the acted
 * element's WebLINX `element` object, and privacy masking. No chrome.* APIs (node tests run this on jsdom).
 *
 * Classic script: defines globalThis.WebTasks.dom (and module.exports for node). It is the public face of
 * its parts, loaded before it (manifest order): lib/privacy.js (what is secret and how it is masked, with
 * the privacy conventions) and lib/serialize.js (the walk that stamps uids and writes the page, with the
 * serialisation conventions). Here: boxes, xpaths and the acted element.
 *
 * Conventions:
 *  - Boxes: getBoundingClientRect in CSS px of the top viewport (as WebLINX); elements of same-origin
 *    iframes are translated by the iframe's content-box offset; `opts.offset` adds the offset of the
 *    captured document itself when it is a cross-origin frame (learnt from the parent by message).
 *  - xpath: from the document root, one step per element, `name[k]` (1-based among same-name siblings)
 *    only when the parent has several children of that name, lower-case names (/html/body/div[2]/a).
 *    Across boundaries: `<host xpath>/#shadow-root/<path in the shadow root>` and
 *    `<iframe xpath>/#document/html/body/…` for same-origin frames; in a cross-origin frame, the path is
 *    from that frame's own document.
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const privacy = W.privacy || require("./privacy.js");
  const serialize = W.serialize || require("./serialize.js");
  const { MASK, NONE, VALUE, SUBTREE, policyFor, startsPrivateSubtree, levelOf, inheritedLevel, frameElementOf } = privacy;
  const { DROPPED, ensureUid, attributePairs, defaultShadowRoot, newWalk, walkRoot, serializeElement } = serialize;

  const UID = C.UID_ATTRIBUTE;
  const TEXT_CONTENT_MAX = 10000; // textContent of a click on <body> would otherwise be the whole page

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

  /** An iframe's viewport in its parent's viewport: {x, y, width, height} (content box, scrollbars of the
   *  iframe element excluded). */
  function contentBox(iframe) {
    const o = contentOffset(iframe);
    let padding = 0;
    let paddingY = 0;
    try {
      const style = iframe.ownerDocument.defaultView.getComputedStyle(iframe);
      padding = (parseFloat(style.paddingLeft) || 0) + (parseFloat(style.paddingRight) || 0);
      paddingY = (parseFloat(style.paddingTop) || 0) + (parseFloat(style.paddingBottom) || 0);
    } catch (err) {
      // detached: no padding known
    }
    return { x: o.x, y: o.y, width: Math.max(0, iframe.clientWidth - padding), height: Math.max(0, iframe.clientHeight - paddingY) };
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
   * Everything a capture needs, in one walk: {html, bboxes, privateRects, privateValues (what the private fields
   * hold, for the worker's redaction only: lib/redact.js)}. opts: {privateSelectors,
   * shadowRootOf (default el.shadowRoot: open roots; chrome.dom.openOrClosedShadowRoot would add closed ones
   * at ≈5 ms per 2,000 elements), offset (of this document in the top viewport, for cross-origin frames),
   * viewport ({width, height} of the top viewport, to keep only visible private rects)}.
   */
  function capturePage(doc, opts) {
    const walk = newWalk(policyFor(opts, doc), opts, { entries: true });
    walkRoot(doc, walk);
    const html = walk.html;
    const { bboxes, privateRects } = measure(walk, doc, opts);
    return { html, bboxes, privateRects, privateValues: walk.privateValues };
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

  const api = {
    MASK, NONE, VALUE, SUBTREE, TEXT_CONTENT_MAX,
    newUid: serialize.newUid, newElementUid: serialize.newElementUid, ensureUid, stampUids, serializePage, boundingBoxes,
    capturePage, privateRects, elementInfo, isPrivate: privacy.isPrivate, privacyLevel: privacy.privacyLevel,
    maskValue: privacy.maskValue, xpathOf, contentOffset, contentBox, offsetToRoot, frameElements, privateElements: privacy.privateElements,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.dom = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
