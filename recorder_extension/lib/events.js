/*
 * What a DOM event acted on, for the content script (content/capture.js, lib/step_page.js): the real target
 * (inside open shadow roots), text fields, the value a change gives, a copy's selection, a click on a scrollbar.
 * Pure functions of the DOM, no state (node tests run them in jsdom).
 *
 * Classic script: defines globalThis.WebTasks.events (and module.exports for node).
 */
(function (root) {
  "use strict";

  const TEXT_TYPES = new Set(["text", "search", "email", "url", "tel", "password", "number"]);

  /** The real target: inside open shadow roots too (composedPath), text nodes lifted to their element. */
  function targetOf(event) {
    const path = typeof event.composedPath === "function" ? event.composedPath() : [];
    let t = path.length ? path[0] : event.target;
    if (t && t.nodeType === 3) t = t.parentElement;
    if (t && t.nodeType === 9) t = t.documentElement;
    return t && t.nodeType === 1 ? t : null;
  }

  function isEditableHost(el) {
    if (el.isContentEditable !== undefined) return el.isContentEditable;
    const value = el.getAttribute("contenteditable");
    return value !== null && /^(|true|plaintext-only)$/i.test(value);
  }

  /** A field typed into: a textarea, a text-like input or a contenteditable host (its input gives textInput). */
  function isTextField(el) {
    const name = el.localName;
    if (name === "textarea") return true;
    if (name === "input") return TEXT_TYPES.has(String(el.type || "text").toLowerCase());
    return isEditableHost(el);
  }

  function fieldText(el) {
    if (el.localName === "input" || el.localName === "textarea") return el.value;
    return typeof el.innerText === "string" ? el.innerText : el.textContent;
  }

  /** Whether a pointer event at (clientX, clientY) is on `el`'s scrollbar (or the page's), not its content. */
  function onScrollbar(event, el) {
    const doc = el.ownerDocument;
    if (el === doc.documentElement || el === doc.body) {
      const html = doc.documentElement;
      return html.clientWidth > 0 && (event.clientX >= html.clientWidth || event.clientY >= html.clientHeight);
    }
    if (!el.clientWidth || (el.scrollHeight <= el.clientHeight && el.scrollWidth <= el.clientWidth)) return false;
    const rect = el.getBoundingClientRect();
    const x = event.clientX - rect.left - el.clientLeft;
    const y = event.clientY - rect.top - el.clientTop;
    return x >= el.clientWidth || y >= el.clientHeight;
  }

  /**
   * A change turn's value: select → the selected options' values joined by ","; checkbox → "true"/"false";
   * radio → its value; file → the file names joined by ", "; other inputs → their value; null for the rest.
   */
  function changeValue(el) {
    const name = el.localName;
    if (name === "select") {
      return Array.from(el.options).filter((o) => o.selected).map((o) => o.value).join(",");
    }
    if (name !== "input") return null;
    const type = String(el.type).toLowerCase();
    if (type === "checkbox") return el.checked ? "true" : "false";
    if (type === "radio") return el.value;
    if (type === "file") return Array.from(el.files || [], (f) => f.name).join(", ");
    return el.value;
  }

  /**
   * What a copy in `doc` on `el` copies: {text, node (the element it is recorded on), range (null inside a field)}.
   * A copy on the page itself is recorded on the selection's element.
   */
  function selectionOf(el, doc) {
    if (el && (el.localName === "input" || el.localName === "textarea")) {
      try {
        const start = el.selectionStart;
        const end = el.selectionEnd;
        if (typeof start === "number" && end > start) return { text: el.value.slice(start, end), node: el, range: null };
      } catch (err) {
        // inputs without a text selection (email in some browsers)
      }
    }
    const rootNode = el && el.getRootNode ? el.getRootNode() : doc;
    const selection = rootNode.getSelection ? rootNode.getSelection() : doc.getSelection();
    const range = selection && selection.rangeCount ? selection.getRangeAt(0) : null;
    let node = el;
    if (range && (!el || el === doc.body || el === doc.documentElement)) {
      node = range.commonAncestorContainer;
      if (node.nodeType !== 1) node = node.parentElement;
    }
    return { text: selection ? selection.toString() : "", node: node || doc.body || doc.documentElement, range };
  }

  /** Keep an event from the page: its default action and every later listener. */
  function stopEvent(event) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }

  const api = { TEXT_TYPES, targetOf, isEditableHost, isTextField, fieldText, onScrollbar, changeValue, selectionOf, stopEvent };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.events = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
