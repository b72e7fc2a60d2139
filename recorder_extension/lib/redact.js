/*
 * Redaction of what the recorder keeps (docs/recorder-privacy.md, "Values and URLs after the field"): private values
 * wherever they reappear, and the values of URL parameters whose names mark secrets. Pure: no chrome.* APIs (node
 * tests run it); the service worker applies it (lib/recorder.js) to every turn, page and MHTML snapshot before
 * anything is written to IndexedDB, and any later capture of the worker (network metadata) is to call it too.
 *
 * Two rules, both giving MASK ("********", the mask the page capture uses):
 *  1. SECRET PARAMETERS (no value needed): in any text, a `name=value` after `?`, `#`, `&` or `;` (so also `&amp;`
 *     in HTML, fragments such as `#access_token=…` and path parameters such as `;jsessionid=…`) whose name contains
 *     one of SECRET_PARAMETER_PARTS (case-insensitive, `+` and ASCII `%XX` decoded) keeps its name and gets MASK as
 *     its value; a URL's user-info password (`scheme://user:password@host`) too; and in a page, the `value` (or
 *     `content`) of an element whose `name` is such a name (`<input type=hidden name=csrf_token value=…>`, the
 *     parameter its form would send). The server applies the same rule to every turn it receives
 *     (annotation/lib/redact.py; one list, checked equal by a test).
 *  2. PRIVATE VALUES (a Redactor made from the values of the private fields seen, kept by SecretStore below): a
 *     value of MIN_TEXT_LENGTH characters or more is replaced wherever it appears — URLs, titles, page text,
 *     attribute values, element text, MHTML parts and headers — as typed and in the forms a browser writes it in a
 *     URL (percent-encoded, `+` for a space, either case of hex), in HTML (`&amp;`, `&lt;`, `&gt;`, `&quot;`,
 *     `&#39;`) or in a JSON string (`\"`, `\\`, `\u00f6`, `\/`). A shorter value (1 to 3 characters would match
 *     inside every other word) is masked only where it is the whole value: a URL parameter's value (decoded), a
 *     field's value (an element's `value` attribute, a turn's text, value, pasted or selected text).
 * Tag and attribute names, the recorder's own uids and an element's xpath are never changed, so a page keeps its
 * structure and its uids still match its boxes; style rules (<style>, style attributes) get rule 1 only.
 * Classic script: defines globalThis.WebTasks.redact (and module.exports for node).
 */
(function (root) {
  "use strict";

  const C = (root.WebTasks && root.WebTasks.C) || require("./constants.js");

  const MASK = "********";
  // The one list (docs/recorder-privacy.md; annotation/lib/redact.py SECRET_PARAMETER_PARTS, equal by a test).
  const SECRET_PARAMETER_PARTS = Object.freeze([
    "password", "passwd", "pwd", "token", "code", "key", "secret", "session", "sid", "auth", "otp", "signature", "sig",
    "credential", "jwt", "saml", "assertion"]);
  const MIN_TEXT_LENGTH = 4; // shorter private values are masked only as whole values (see rule 2)
  const MAX_VALUES = 100; // the private values remembered, most recent kept
  const MAX_VALUE_LENGTH = 10000; // a longer value is not remembered (a private textarea's essay)

  // `name=value` after a separator. Explicit whitespace (HTML's), not \s: the server's Python regex must match the
  // very same characters. A name has no `,` or `/` (so `;base64,…=` in a data: URL is no parameter); a value ends at
  // a separator, whitespace, a quote, `<`, `>` or `)` (CSS url(…)).
  const PARAMETER = /([?#&;])([^=&#;?,\/\t\n\f\r "'<>]+)=([^&#?\t\n\f\r "'<>)]*)/g;
  const USERINFO = /([A-Za-z][A-Za-z0-9+.-]*:\/\/[^\t\n\f\r \/?#@:"'<>]*:)([^\t\n\f\r \/?#@"'<>]+)@/g;
  const ASCII_ESCAPE = /%([0-7][0-9A-Fa-f])/g;

  // Anything rule 1 could change: a separator, then a name holding a listed part (or an ASCII %XX that may decode to
  // one), then "="; a user-info password; a field whose name holds one. A page without any is left as it is at the
  // cost of one scan (lib/redact.js redactHtml's fast path). Unicode case folding, as toLowerCase in nameKey.
  const PARTS = "(?:" + SECRET_PARAMETER_PARTS.join("|") + "|%[0-7][0-9A-Fa-f])";
  const RULE_1_HINT = new RegExp(
    `[?#&;][^=&#;?,/\t\n\f\r "'<>]*${PARTS}[^=&#;?,/\t\n\f\r "'<>]*=`
      + `|:\/\/[^\t\n\f\r /?#@:"'<>]*:[^\t\n\f\r /?#@"'<>]+@`
      + `|name[\t\n\f\r ]*=[\t\n\f\r ]*["']?[^"'\t\n\f\r >]*${PARTS}`,
    "iu",
  );

  /** A parameter name as compared with the list: `+` a space, ASCII %XX decoded, lower case. */
  function nameKey(name) {
    return name.replace(/\+/g, " ").replace(ASCII_ESCAPE, (_, hex) => String.fromCharCode(parseInt(hex, 16))).toLowerCase();
  }

  /** Whether a query or fragment parameter of this name holds a secret (its name contains a listed part). */
  function isSecretParameter(name) {
    const key = nameKey(String(name));
    return SECRET_PARAMETER_PARTS.some((part) => key.includes(part));
  }

  /** A URL parameter's value as the page meant it: `+` a space, %XX decoded (as it is where that fails). */
  function decodeParameter(value) {
    const spaced = value.replace(/\+/g, " ");
    try {
      return decodeURIComponent(spaced);
    } catch (err) {
      return spaced;
    }
  }

  /**
   * Rule 1 on any text: secret-named parameters and user-info passwords masked; with `exact` (a Set of private
   * values), also any parameter whose decoded value is one of them.
   */
  function maskParameters(text, exact) {
    if (typeof text !== "string" || (!text.includes("=") && !text.includes("@"))) return text;
    let out = text.replace(USERINFO, (_, head) => head + MASK + "@");
    out = out.replace(PARAMETER, (match, separator, name, value) => {
      if (!value || value === MASK) return match;
      if (isSecretParameter(name) || (exact && exact.has(decodeParameter(value)))) return `${separator}${name}=${MASK}`;
      return match;
    });
    return out;
  }

  // --- The forms a value is written in ------------------------------------------------------------------------

  /** application/x-www-form-urlencoded, as a browser submits a GET form: `*-._` and alphanumerics kept, `+` a space. */
  function formEncode(value) {
    return encodeURIComponent(value).replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase()).replace(/%20/g, "+");
  }

  function lowerHex(text) {
    return text.replace(/%[0-9A-F]{2}/g, (s) => s.toLowerCase());
  }

  const HTML_ESCAPES = [
    (s) => s.replace(/&/g, "&amp;"),
    (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"),
    (s) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;"),
    (s) => s.replace(/&/g, "&amp;").replace(/'/g, "&#39;"),
    (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;"),
  ];

  /** Every form of `value` to look for: as typed, in a URL (several encodings), each also escaped for HTML. */
  function formsOf(value) {
    const encoded = [value];
    for (const encode of [encodeURIComponent, encodeURI, formEncode]) {
      try {
        const text = encode(value);
        encoded.push(text, lowerHex(text), text.replace(/%20/g, "+"));
      } catch (err) {
        // a lone surrogate: only the typed form
      }
    }
    const forms = new Set(encoded);
    for (const text of encoded) for (const escape of HTML_ESCAPES) forms.add(escape(text));
    for (const text of jsonForms(value)) forms.add(text);
    return [...forms];
  }

  /**
   * `value` inside a JSON string (a request or response body, an inline script): as JSON.stringify writes it,
   * non-ASCII as \u escapes (either case of hex), `/` as `\/` (PHP's json_encode).
   */
  function jsonForms(value) {
    const json = JSON.stringify(value).slice(1, -1);
    const ascii = (hex) => json.replace(/[\u007f-\uffff]/g, (c) => "\\u" + hex(c.charCodeAt(0).toString(16).padStart(4, "0")));
    const forms = [json, ascii((h) => h), ascii((h) => h.toUpperCase())];
    return [...forms, ...forms.map((text) => text.replace(/\//g, "\\/"))];
  }

  /** A string's UTF-8 bytes as one character per byte (how lib/redact reads MHTML). */
  function toBinary(text) {
    const bytes = new TextEncoder().encode(text);
    let out = "";
    for (let i = 0; i < bytes.length; i++) out += String.fromCharCode(bytes[i]);
    return out;
  }

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  /** Whether a private value is remembered at all: text, not only spaces, not the mask itself, not too long. */
  function acceptable(value) {
    return typeof value === "string" && value.trim() !== "" && value.length <= MAX_VALUE_LENGTH && !MASK.includes(value);
  }

  // --- HTML ---------------------------------------------------------------------------------------------------

  // A tag (start or end, with its attributes), a comment or a declaration; the text in between is page text.
  const TOKEN = /<!--[\s\S]*?-->|<![^>]*>|<\/?[A-Za-z][^\t\n\f\r \/>]*(?:[\t\n\f\r \/]+[^\t\n\f\r "'>\/=]+(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*"|'[^']*'|[^\t\n\f\r "'=<>`]+))?)*[\t\n\f\r \/]*>/g;
  const ATTRIBUTE = /([\t\n\f\r \/]+)([^\t\n\f\r "'>\/=]+)(?:([\t\n\f\r ]*=[\t\n\f\r ]*)(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r "'=<>`]+)))?/g;
  const UID = C.UID_ATTRIBUTE;

  // A field (or meta) whose name marks a secret keeps its value or content out, as its parameter would be in a URL.
  const FIELD_VALUES = new Set(["value", "content"]);

  function isSecretField(found) {
    if (!found) return false;
    const name = found[1] !== undefined ? found[1] : found[2] !== undefined ? found[2] : found[3];
    return isSecretParameter(unescapeHtml(name));
  }

  function unescapeHtml(text) {
    return text.replace(/&(amp|lt|gt|quot|#39|#x27|apos);/g, (_, name) => ({ amp: "&", lt: "<", gt: ">", quot: '"' })[name] || "'");
  }

  /** Rules 1 and 2 on HTML: page text and attribute values (not tag or attribute names, not uids). */
  function redactHtml(html, r) {
    if (typeof html !== "string" || !html || !r.mayChange(html)) return html;
    let out = "";
    let last = 0;
    let css = false; // inside <style>: style rules get rule 1 only (see Redactor.css)
    const token = new RegExp(TOKEN.source, "g"); // its own: a srcdoc's HTML is redacted inside the loop
    for (let m = token.exec(html); m; m = token.exec(html)) {
      const between = html.slice(last, m.index);
      out += css ? r.css(between) : r.text(between);
      out += m[0][1] === "!" ? r.text(m[0]) : redactTag(m[0], r);
      const opens = /^<(\/?)style[\t\n\f\r \/>]/i.exec(m[0]);
      if (opens) css = !opens[1];
      last = token.lastIndex;
    }
    return out + (css ? r.css(html.slice(last)) : r.text(html.slice(last)));
  }

  function redactTag(tag, r) {
    const name = /^<\/?[^\t\n\f\r \/>]*/.exec(tag)[0];
    const secretField = isSecretField(/[\t\n\f\r \/]name[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r "'=<>`]+))/i.exec(tag));
    const rest = tag.slice(name.length).replace(ATTRIBUTE, (match, space, key, equals, dq, sq, bare) => {
      if (equals === undefined) return match;
      const raw = dq !== undefined ? dq : sq !== undefined ? sq : bare;
      const quote = dq !== undefined ? '"' : sq !== undefined ? "'" : "";
      const lower = key.toLowerCase();
      let value = raw;
      if (lower === UID) return match;
      if (secretField && FIELD_VALUES.has(lower) && raw && raw !== MASK) {
        value = MASK;
      } else if (lower === "srcdoc") {
        const inner = unescapeHtml(raw);
        const redacted = redactHtml(inner, r);
        if (redacted !== inner) value = redacted.replace(/&/g, "&amp;").replace(quote === "'" ? /'/g : /"/g, quote === "'" ? "&#39;" : "&quot;");
      } else if (lower === "value" && r.isValue(unescapeHtml(raw))) {
        value = MASK;
      } else {
        value = lower === "style" ? r.css(raw) : r.text(raw);
      }
      return value === raw ? match : `${space}${key}${equals}${quote}${value}${quote}`;
    });
    return name + rest;
  }

  // --- Turns --------------------------------------------------------------------------------------------------

  // Keys whose strings are the recorder's own (uids, paths, ids, enums): never changed.
  const KEEP = new Set([UID, "uid", "xpath", "tagName", "mhtml", "stepOp", "pointerType", "transitionType", "target"]);
  // Keys whose strings are a field's value: masked also when a short private value is the whole of it.
  const VALUES = new Set(["text", "value", "pasted", "selected", "optionText"]);
  const HTML_KEYS = new Set(["outerHTML", "innerHTML"]);

  function redactValue(value, key, r) {
    if (typeof value === "string") {
      if (KEEP.has(key)) return value;
      if (HTML_KEYS.has(key)) return redactHtml(value, r);
      return VALUES.has(key) ? r.value(value) : r.text(value);
    }
    if (Array.isArray(value)) return value.map((item) => redactValue(item, key, r));
    if (value && typeof value === "object") {
      const out = {};
      for (const [k, v] of Object.entries(value)) out[k] = redactValue(v, k, r);
      if (key === "attributes" && typeof value.name === "string" && isSecretParameter(value.name)) {
        for (const k of FIELD_VALUES) if (typeof out[k] === "string" && out[k]) out[k] = MASK;
      }
      return out;
    }
    return value;
  }

  // --- MHTML --------------------------------------------------------------------------------------------------

  /** Bytes → one character per byte, and back. */
  function bytesToBinary(bytes) {
    let out = "";
    for (let i = 0; i < bytes.length; i += 0x8000) out += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return out;
  }

  function binaryToBytes(text) {
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 0xff;
    return bytes;
  }

  function decodeQuotedPrintable(text) {
    return text.replace(/=\r?\n/g, "").replace(/=([0-9A-Fa-f]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)));
  }

  function base64Lines(binary) {
    return (root.btoa(binary).match(/.{1,76}/g) || []).join("\r\n");
  }

  /** One header's value: encoded words (=?charset?Q|B?…?=) decoded, redacted, re-encoded as UTF-8 base64 words. */
  function redactHeaderValue(value, r) {
    const words = value.replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (match, charset, kind, text) => {
      let binary;
      try {
        binary = kind.toUpperCase() === "B" ? root.atob(text) : decodeQuotedPrintable(text.replace(/_/g, " "));
      } catch (err) {
        return match;
      }
      const redacted = r.text(binary);
      return redacted === binary ? match : `=?${charset}?B?${root.btoa(redacted)}?=`;
    });
    return r.text(words);
  }

  /** A header block (lines up to the blank line): each header redacted, folded lines kept together. */
  function redactHeaders(block, r) {
    return block.replace(/^([^\r\n:]+:)((?:[^\r\n]*)(?:\r?\n[\t ][^\r\n]*)*)/gm, (match, name, value) => {
      const redacted = redactHeaderValue(value, r);
      return redacted === value ? match : name + redacted;
    });
  }

  function headerOf(headers, name) {
    const found = new RegExp(`^${name}:[\\t ]*([^\\r\\n]*(?:\\r?\\n[\\t ][^\\r\\n]*)*)`, "im").exec(headers);
    return found ? found[1].replace(/\r?\n[\t ]/g, " ").trim() : "";
  }

  /** One MIME part (headers, blank line, body): text parts decoded, redacted and, if changed, stored as base64. */
  function redactPart(part, r) {
    const split = /\r?\n\r?\n/.exec(part);
    if (!split) return redactHeaders(part, r);
    let headers = redactHeaders(part.slice(0, split.index), r);
    const gap = split[0];
    const body = part.slice(split.index + gap.length);
    const type = headerOf(headers, "Content-Type").toLowerCase();
    if (!/^text\/|^application\/(xhtml|xml|json|javascript)|^image\/svg/.test(type)) return headers + gap + body;
    const encoding = headerOf(headers, "Content-Transfer-Encoding").toLowerCase();
    const trailing = /(\r?\n)*$/.exec(body)[0];
    const content = body.slice(0, body.length - trailing.length);
    let decoded = content;
    if (encoding === "quoted-printable") decoded = decodeQuotedPrintable(content);
    else if (encoding === "base64") decoded = root.atob(content.replace(/[\r\n\t ]/g, ""));
    const redacted = /html|xml|svg/.test(type) ? redactHtml(decoded, r) : r.text(decoded);
    if (redacted === decoded) return headers + gap + body;
    if (/^Content-Transfer-Encoding:/im.test(headers)) {
      headers = headers.replace(/^Content-Transfer-Encoding:[^\r\n]*/im, "Content-Transfer-Encoding: base64");
    } else {
      headers += "\r\nContent-Transfer-Encoding: base64";
    }
    return headers + gap + base64Lines(redacted) + trailing;
  }

  /** An MHTML archive (bytes) with both rules applied to its headers and text parts; the same bytes if unchanged. */
  function redactMhtml(bytes, r) {
    const input = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    const text = bytesToBinary(input);
    const split = /\r?\n\r?\n/.exec(text);
    if (!split) return input;
    const head = redactHeaders(text.slice(0, split.index), r);
    const boundary = /boundary="?([^";\r\n]+)"?/i.exec(headerOf(text.slice(0, split.index), "Content-Type"));
    const body = text.slice(split.index);
    let out = head;
    if (!boundary) out += body;
    else {
      const delimiter = "--" + boundary[1];
      const pieces = body.split(delimiter);
      out += pieces.map((piece, i) => (i === 0 || piece.startsWith("--") ? piece : redactPart(piece, r))).join(delimiter);
    }
    return out === text ? input : binaryToBytes(out);
  }

  // --- The redactor -------------------------------------------------------------------------------------------

  /**
   * Both rules with these private values. text(s), value(s) (a field's value: also a short value when it is all of
   * it), html(s), turn(t) (its arguments), capture(m) (a CAPTURE message: its turn and page), mhtml(bytes).
   * `binary`: the strings it is given hold UTF-8 bytes, one character each (MHTML).
   */
  class Redactor {
    constructor(values = [], { binary = false } = {}) {
      const kept = [...new Set(values.filter(acceptable))];
      const convert = binary ? toBinary : (s) => s;
      this.values = kept;
      const wholes = [...new Set(kept.flatMap((v) => [v, v.trim()]))];
      // Compared with a parameter's decoded value (text) and, in MHTML, with raw UTF-8 bytes too.
      this.exact = new Set(binary ? [...wholes, ...wholes.map(toBinary)] : wholes);
      const needles = new Set();
      for (const value of kept) {
        if (value.trim().length < MIN_TEXT_LENGTH) continue;
        for (const form of [...formsOf(value), ...formsOf(value.trim())]) needles.add(convert(form));
      }
      const sorted = [...needles].filter(Boolean).sort((a, b) => b.length - a.length);
      this.pattern = sorted.length ? new RegExp(sorted.map(escapeRegExp).join("|"), "g") : null;
      this.probe = sorted.length ? new RegExp(this.pattern.source) : null; // not global: test() keeps no state
      // A short private value as a whole parameter or attribute value: `=`, maybe a quote, a form of it, its end
      // (a longer one is found by `probe` anywhere).
      const whole = new Set();
      for (const value of wholes.filter((v) => v.trim().length < MIN_TEXT_LENGTH)) {
        for (const form of formsOf(value)) whole.add(convert(form));
      }
      const forms = [...whole].filter(Boolean).map(escapeRegExp).join("|");
      this.wholeProbe = forms ? new RegExp(`=[\t\n\f\r ]*["']?(?:${forms})(?:["'&#?\t\n\f\r <>)]|$)`) : null;
      this.binaryRedactor = binary ? this : null;
    }

    /** Whether either rule could change `text`: false lets a page go through untouched after one scan or two. */
    mayChange(text) {
      if (this.probe && this.probe.test(text)) return true;
      if (this.wholeProbe && this.wholeProbe.test(text)) return true;
      return RULE_1_HINT.test(text);
    }

    /** Both rules on any text (a URL, a title, a page's text, an attribute's value). */
    text(text) {
      if (typeof text !== "string" || !text) return text;
      // Values first: a value that holds `&token=…` itself must go whole, not lose only its tail to rule 1.
      const out = this.pattern ? text.replace(this.pattern, MASK) : text;
      return maskParameters(out, this.exact.size ? this.exact : null);
    }

    /**
     * Style rules (a <style> element, a style attribute): rule 1 only (a signed image URL in url(…)). A private value
     * is no style, while a short one ("none", "auto", "left") would break the page's layout wherever it is masked.
     */
    css(text) {
      if (typeof text !== "string" || !text) return text;
      return maskParameters(text, this.exact.size ? this.exact : null);
    }

    /** Whether `text` is, as a whole, a private value (of any length). */
    isValue(text) {
      return this.exact.has(text) || this.exact.has(String(text).trim());
    }

    /** A field's value: the mask when it is a private value, whatever its length; else as text. */
    value(text) {
      if (typeof text !== "string" || !text) return text;
      return this.isValue(text) ? MASK : this.text(text);
    }

    html(html) {
      return redactHtml(html, this);
    }

    /** A turn with rule 1 and 2 applied to its arguments and label (not to ids, uids, xpaths or blob references). */
    turn(turn) {
      if (!turn || typeof turn !== "object" || !turn.arguments) return turn;
      const out = { ...turn, arguments: redactValue(turn.arguments, "arguments", this) };
      if (typeof turn.label === "string") out.label = this.value(turn.label);
      return out;
    }

    /** A CAPTURE message: its turn, and its page's HTML (before the page blob is made). */
    capture(message) {
      if (!message || typeof message !== "object") return message;
      const out = { ...message, turn: this.turn(message.turn) };
      if (message.page && typeof message.page.html === "string") out.page = { ...message.page, html: this.html(message.page.html) };
      return out;
    }

    mhtml(bytes) {
      if (!bytes) return bytes;
      if (!this.binaryRedactor) this.binaryRedactor = new Redactor(this.values, { binary: true });
      return redactMhtml(bytes, this.binaryRedactor);
    }
  }

  function createRedactor(values = []) {
    return new Redactor(values);
  }

  /**
   * The private values seen while recording, in the worker's memory and in chrome.storage.session (`area`: held in
   * memory by the browser, never written to disk, not readable by content scripts; it outlives a stopped worker):
   * never persisted, never sent. add(values) is synchronous (a CAPTURE's values count before the navigation that
   * follows it); redactor() resolves once the values kept before a worker restart are back.
   */
  class SecretStore {
    constructor(area = null, key = C.STORAGE.SECRETS) {
      this.area = area;
      this.key = key;
      this.values = [];
      this.cached = null;
      this.writes = Promise.resolve();
      this.loaded = area
        ? Promise.resolve(area.get(key)).then((found) => this.merge((found && found[key]) || [], false), () => {})
        : Promise.resolve();
    }

    /** Remember private values (strings; others ignored). Returns how many were new. */
    add(values) {
      return this.merge(Array.isArray(values) ? values : [values], true);
    }

    merge(values, save) {
      const fresh = values.filter((v) => acceptable(v) && !this.values.includes(v));
      if (!fresh.length) return 0;
      this.values = [...this.values, ...fresh].slice(-MAX_VALUES);
      this.cached = null;
      if (save && this.area) {
        const snapshot = { [this.key]: this.values };
        this.writes = this.writes.then(() => this.area.set(snapshot)).catch(() => {});
      }
      return fresh.length;
    }

    /** Take a message's private values (CAPTURE, STEP_SELECT: `privateValues`) out of it and remember them. */
    take(message) {
      if (!message || !("privateValues" in message)) return 0;
      const values = message.privateValues;
      delete message.privateValues;
      return this.add(Array.isArray(values) ? values : []);
    }

    async redactor() {
      await this.loaded;
      if (!this.cached) this.cached = new Redactor(this.values);
      return this.cached;
    }
  }

  const api = {
    MASK, SECRET_PARAMETER_PARTS, MIN_TEXT_LENGTH, MAX_VALUES, MAX_VALUE_LENGTH,
    isSecretParameter, maskParameters, formEncode, formsOf, Redactor, createRedactor, SecretStore,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.redact = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
