/*
 * What a DOM event acted on, for the content script (content/capture.js, lib/step_page.js): the real target
 * (inside open shadow roots), text fields, the value a change gives, a copy's selection, a click on a scrollbar,
 * and the action's label for review (actionLabel: the element's accessible name, never a private value).
 * Pure functions of the DOM, no state (node tests run them in jsdom).
 *
 * Classic script: defines globalThis.WebTasks.events (and module.exports for node).
 */
(function (root) {
  "use strict";

  const privacy = (root.WebTasks && root.WebTasks.privacy) || require("./privacy.js");

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


  // --- Labels ----------------------------------------------------------------------------------------------

  const LABEL_MAX = 80;
  const PRIVATE_LABEL = "(private)";
  const BUTTON_TYPES = new Set(["submit", "button", "reset", "image"]);
  // Their text is a value or code, never a name: left out of a label's or a link's text.
  const NOT_NAME_TEXT = new Set(["input", "textarea", "select", "option", "script", "style", "template"]);

  function clean(text) {
    const flat = String(text || "").replace(/\s+/g, " ").trim();
    return flat.length > LABEL_MAX ? `${flat.slice(0, LABEL_MAX - 1)}…` : flat;
  }

  /** "first_name", "firstName" → "first name". */
  function readable(name) {
    return String(name || "").replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_\-.[\]]+/g, " ").trim().toLowerCase();
  }

  function isField(el) {
    const name = el.localName;
    if (name === "input") return !BUTTON_TYPES.has(String(el.type).toLowerCase());
    return name === "textarea" || name === "select" || isEditableHost(el);
  }

  /** Visible-ish text of `el` for a name: no control's value or options, no private subtree, no code. Stops once
   *  there is more than a label shows (a click on <body> must not walk the whole page). */
  function nameText(el, policy) {
    let out = "";
    (function walk(node) {
      for (let n = node.firstChild; n && out.length < LABEL_MAX * 4; n = n.nextSibling) {
        if (n.nodeType === 3) out += n.data;
        else if (n.nodeType === 1 && !NOT_NAME_TEXT.has(n.localName) && !privacy.startsPrivateSubtree(n, policy)) {
          out += n.localName === "img" ? ` ${n.getAttribute("alt") || ""} ` : " ";
          walk(n);
        }
      }
    })(el);
    return out;
  }

  /** The text of a labelling element, "" when it is private. */
  function labelText(source, policy) {
    if (privacy.levelOf(source, privacy.inheritedLevel(source, policy), policy) === privacy.SUBTREE) return "";
    return clean(nameText(source, policy));
  }

  function byIds(el, ids) {
    const scope = el.getRootNode ? el.getRootNode() : el.ownerDocument;
    const find = (id) => (scope.getElementById ? scope.getElementById(id) : el.ownerDocument.getElementById(id));
    return String(ids).split(/\s+/).filter(Boolean).map(find).filter(Boolean);
  }

  function fieldLabels(el) {
    if (el.labels && el.labels.length) return Array.from(el.labels);
    const wrapping = el.closest("label");
    return wrapping ? [wrapping] : [];
  }

  /** The accessible name (simplified accname): aria-labelledby, aria-label, <label>, a control's own text or
   *  value (buttons, links: never a field's), alt, placeholder, title, then name or id made readable. */
  function accessibleName(el, policy) {
    const attr = (name) => clean(el.getAttribute(name));
    const labelledBy = el.getAttribute("aria-labelledby");
    const steps = [
      () => (labelledBy ? clean(byIds(el, labelledBy).map((s) => labelText(s, policy)).join(" ")) : ""),
      () => attr("aria-label"),
      () => (isField(el) ? clean(fieldLabels(el).map((s) => labelText(s, policy)).join(" ")) : ""),
      () => (el.localName === "input" && BUTTON_TYPES.has(String(el.type).toLowerCase()) ? clean(el.value) : ""),
      () => (isField(el) ? "" : clean(nameText(el, policy))),
      () => attr("alt"),
      () => attr("placeholder") || attr("aria-placeholder"),
      () => attr("title"),
      () => clean(readable(el.getAttribute("name") || el.id)),
    ];
    for (const step of steps) {
      const name = step();
      if (name) return name;
    }
    return "";
  }

  /** The form's submit button: its first button of type submit (a button's default) or submit/image input, the
   *  ones outside it that name it by their form attribute too (form.elements). */
  function submitButton(form) {
    const controls = Array.from(form.elements || form.querySelectorAll("button, input"));
    const isSubmit = (c) => (c.localName === "button" || c.localName === "input") && /^(submit|image)$/i.test(String(c.type));
    return controls.find(isSubmit) || null;
  }

  function submitLabel(form, policy) {
    const labelledBy = form.getAttribute("aria-labelledby");
    const own = (labelledBy ? clean(byIds(form, labelledBy).map((s) => labelText(s, policy)).join(" ")) : "") ||
      clean(form.getAttribute("aria-label")) || clean(form.getAttribute("title"));
    if (own) return own;
    const button = submitButton(form);
    const name = button ? accessibleName(button, policy) : "";
    return name || clean(readable(form.getAttribute("name") || form.id));
  }

  /** A select's chosen options' text, "" for a private select. */
  function chosenText(el, level) {
    if (level !== privacy.NONE) return "";
    return clean(Array.from(el.options).filter((o) => o.selected).map((o) => o.label || o.textContent).join(", "));
  }

  /**
   * What review names an action on `el` by (≤ 80 chars): the element's accessible name (see accessibleName);
   * a submit: the form's name or its submit button's text; a select's change: "Name: chosen option". Never a
   * field's value; a private subtree's element is "(private)", a private select's choice is left out.
   * opts: {privateSelectors}.
   */
  function actionLabel(el, intent, opts) {
    if (!el || el.nodeType !== 1) return "";
    const policy = privacy.policyFor(opts, el);
    const level = privacy.levelOf(el, privacy.inheritedLevel(el, policy), policy);
    if (level === privacy.SUBTREE) return PRIVATE_LABEL;
    if (el.localName === "form") return submitLabel(el, policy);
    const name = accessibleName(el, policy);
    if (el.localName !== "select" || intent !== "change") return name;
    const chosen = chosenText(el, level);
    return clean(name && chosen ? `${name}: ${chosen}` : name || chosen);
  }

  const api = { TEXT_TYPES, actionLabel, accessibleName: (el, opts) => accessibleName(el, privacy.policyFor(opts, el)), targetOf, isEditableHost, isTextField, fieldText, onScrollbar, changeValue, selectionOf, stopEvent };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.events = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
