/*
 * Step mode's raw dump (docs/recorder.md#raw-dump): the tab's traffic as HAR 1.2 from the debugger protocol's Network
 * events, and the DOM snapshot (DOMSnapshot.captureSnapshot) with a documented subset of computed styles.
 *
 * Privacy (docs/recorder-privacy.md#traffic-and-dom-snapshots-step-mode): Cookie, Set-Cookie, Authorization and
 * Proxy-Authorization headers are dropped, a header named as a secret URL parameter would be (X-Auth-Token) keeps
 * its name only, and `cookies` is always []; every URL, header value and body kept goes
 * through the redactor (private values in any encoding, secret URL parameters); no body at all (request or
 * response) of a request sent while the tab's page had a private field, or of a step whose page has one; the DOM
 * snapshot of such a page is not kept (as MHTML is not).
 *
 * Classic script: defines globalThis.WebTasks.har (and module.exports for node).
 */
(function (root) {
  "use strict";

  const LIMITS = {
    BODY_BYTES: 256 * 1024, // one response body kept at most (a longer one: content.comment says so)
    STEP_BODY_BYTES: 4 * 1024 * 1024, // all response bodies of one step's HAR
    POST_DATA_BYTES: 64 * 1024, // a request body kept at most (Network.enable's maxPostDataSize)
    ENTRIES: 1000, // entries of one step's HAR (the first kept; log.comment counts the others)
    HAR_BYTES: 16 * 1024 * 1024, // one step's HAR as uploaded (UTF-8), the entries that fit (the server's: 32 MiB)
  };
  const SECRET_HEADERS = new Set(["cookie", "set-cookie", "authorization", "proxy-authorization"]);
  // Bodies kept are text: HTML, CSS, scripts, JSON, XML, forms. Images, fonts, media are not kept.
  const TEXT_TYPE = /^(text\/|application\/(json|javascript|ecmascript|xml|x-www-form-urlencoded|[\w.-]+\+(json|xml)))/i;
  // The computed styles a DOM snapshot keeps per laid-out node (what visibility, clickability and look depend on).
  const DOM_STYLES = [
    "display", "visibility", "opacity", "position", "z-index", "overflow", "pointer-events", "cursor",
    "color", "background-color", "font-size", "font-weight",
  ];
  const DOM_FORMAT = "webtasks-dom-snapshot/1";
  const CREATOR = { name: "webtasks-recorder", version: "1" };
  const NOT_KEPT = "not kept: the page had a private field";
  const redact = (root.WebTasks && root.WebTasks.redact) || require("./redact.js");
  const privacy = (root.WebTasks && root.WebTasks.privacy) || require("./privacy.js");

  /** The traffic of one tab from CDP Network events; take() hands over the finished requests since the last take. */
  class NetworkLog {
    /** fetchBody(requestId) → {body, base64Encoded}: Network.getResponseBody, asked as soon as a request finished. */
    constructor({ fetchBody = null, mainFrame = null } = {}) {
      this.fetchBody = fetchBody;
      this.mainFrame = mainFrame; // the tab's top frame id: its navigation starts a page of unknown privacy
      this.pending = new Map();
      this.done = [];
      this.private = false;
      this.navigation = null; // the loader id of the top frame's last navigation, until its page sends a request
      this.page = null; // the loader id of the top frame's page in place (once it sent a request of its own)
      // Memory between two steps (a page polling for an hour): the requests a HAR keeps, the bodies it can keep.
      this.over = 0; // requests finished since the last take() and not held (LIMITS.ENTRIES)
      this.bodyBytes = 0; // bodies held since the last take()
    }

    /** Requests sent from now on were sent from a page with (or without) a private field. */
    setPrivate(flag) {
      this.private = Boolean(flag);
    }

    event(method, params) {
      if (!params || typeof params.requestId !== "string") return;
      const id = params.requestId;
      const record = this.pending.get(id);
      if (method === "Network.requestWillBeSent" && !record && this.pending.size >= LIMITS.ENTRIES) {
        this.over += 1; // never answered ones (long polls, streams) hold no more than the entries of a step
      } else if (method === "Network.requestWillBeSent") {
        if (record && params.redirectResponse) {
          // A redirect keeps the request id: the hop before ends here with the redirect's response.
          Object.assign(record, { response: params.redirectResponse, redirectURL: params.request.url, finished: params.timestamp });
          this.finish(id, record);
        }
        const topFrame = Boolean(this.mainFrame) && params.frameId === this.mainFrame;
        // The top frame's next page is in place once a request of its document comes (the navigation's loader id):
        // what it sends is its own (judged at the next step). A navigation that left the page (204, a download) is not.
        if (topFrame && this.navigation && params.loaderId === this.navigation && params.type !== "Document") {
          this.private = false;
          this.page = this.navigation;
          this.navigation = null;
        }
        this.pending.set(id, {
          request: params.request, type: params.type || "", started: params.timestamp, wallTime: params.wallTime,
          private: this.private || Boolean(record && record.private), loader: params.loaderId,
        });
        if (topFrame && params.type === "Document") this.navigation = params.loaderId || id;
      } else if (!record) {
        return;
      } else if (method === "Network.responseReceived") {
        record.response = params.response;
      } else if (method === "Network.loadingFinished") {
        Object.assign(record, { finished: params.timestamp, size: params.encodedDataLength });
        if (this.fetchBody && wantsBody(record) && this.done.length < LIMITS.ENTRIES) {
          record.body = Promise.resolve(this.fetchBody(id)).then((found) => this.held(decode(found)), () => null);
        }
        this.finish(id, record);
      } else if (method === "Network.loadingFailed") {
        Object.assign(record, { finished: params.timestamp, error: params.errorText || "failed" });
        this.finish(id, record);
      }
    }

    finish(id, record) {
      this.pending.delete(id);
      if (this.done.length < LIMITS.ENTRIES) this.done.push(record);
      else this.over += 1;
    }

    /** A decoded body, held only within the limits (one body, the step's bodies); else null. */
    held(text) {
      if (text === null || text.length > Math.min(LIMITS.BODY_BYTES, LIMITS.STEP_BODY_BYTES - this.bodyBytes)) return null;
      this.bodyBytes += text.length;
      return text;
    }

    /** The finished requests since the last take (`over`: how many more were not held). */
    take() {
      const out = this.over ? Object.assign(this.done, { over: this.over }) : this.done;
      this.done = [];
      this.over = 0;
      this.bodyBytes = 0;
      return out;
    }
  }

  function wantsBody(record) {
    const response = record.response || {};
    return !record.private && TEXT_TYPE.test(response.mimeType || "") && (record.size || 0) <= LIMITS.BODY_BYTES;
  }

  function headerList(headers, redactor) {
    const out = [];
    for (const [name, value] of Object.entries(headers || {})) {
      const key = name.trim().toLowerCase();
      if (SECRET_HEADERS.has(key)) continue;
      // A credential by its name (X-Auth-Token, X-Api-Key, X-CSRF-Token): its name kept, as a secret URL parameter's.
      const secret = !key.startsWith(":") && redact.isSecretParameter(key);
      for (const one of String(value).split("\n")) out.push({ name, value: secret ? redact.MASK : mask(one, redactor) });
    }
    return out;
  }

  function mask(text, redactor) {
    return redactor && typeof text === "string" ? redactor.text(text) : text;
  }

  // A request body's secret-named fields (rule 1 of lib/redact.js, which only sees `name=value` after a separator):
  // JSON `"name": value` at any depth, multipart `name="…"` parts, a form body's first field.
  const JSON_FIELD = /"((?:[^"\\]|\\.)*)"(\s*:\s*)("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*)/g;
  const MULTIPART_FIELD = /(\bname="([^"]*)"[^\r\n]*\r?\n(?:[^\r\n]+\r?\n)*\r?\n)([\s\S]*?)(?=\r?\n--)/g;

  function jsonKey(name) {
    try {
      return JSON.parse(`"${name}"`);
    } catch (err) {
      return name;
    }
  }

  function maskBody(text, redactor) {
    if (typeof text !== "string" || text === "") return text;
    const secret = `"${redact.MASK}"`;
    let out = text.replace(JSON_FIELD, (match, name, colon, value) =>
      value !== secret && redact.isSecretParameter(jsonKey(name)) ? `"${name}"${colon}${secret}` : match);
    out = out.replace(MULTIPART_FIELD, (match, head, name, value) =>
      value && redact.isSecretParameter(name) ? head + redact.MASK : match);
    return mask(redact.maskParameters("&" + out).slice(1), redactor);
  }

  function queryOf(url) {
    try {
      return [...new URL(url).searchParams].map(([name, value]) => ({ name, value }));
    } catch {
      return [];
    }
  }

  function decode(found) {
    if (!found || typeof found.body !== "string") return null;
    if (!found.base64Encoded) return found.body;
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(atob(found.body), (c) => c.charCodeAt(0)));
    } catch {
      return null; // not UTF-8 text: not kept
    }
  }

  /** CDP ResourceTiming → HAR timings (ms; -1 where the phase did not happen). */
  function timingsOf(record) {
    const total = Math.max(0, ((record.finished || record.started) - record.started) * 1000);
    const t = record.response && record.response.timing;
    if (!t) return { blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait: total, receive: 0 };
    const span = (a, b) => (a >= 0 && b >= 0 ? b - a : -1);
    const headersEnd = Math.max(0, t.receiveHeadersEnd || 0);
    const end = Math.max(headersEnd, ((record.finished || t.requestTime) - t.requestTime) * 1000);
    return {
      blocked: -1, dns: span(t.dnsStart, t.dnsEnd), connect: span(t.connectStart, t.connectEnd), ssl: span(t.sslStart, t.sslEnd),
      send: Math.max(0, span(t.sendStart, t.sendEnd)), wait: Math.max(0, headersEnd - Math.max(0, t.sendEnd || 0)),
      receive: Math.max(0, end - headersEnd),
    };
  }

  /** One finished request as a HAR entry; `budget` ({left}) bounds the step's bodies. */
  async function toEntry(record, { redactor, keepBodies, budget }) {
    const request = record.request || {};
    const response = record.response || {};
    const keep = (typeof keepBodies === "function" ? keepBodies(record) : keepBodies) && !record.private;
    const url = mask(request.url || "", redactor);
    const timings = timingsOf(record);
    const entry = {
      startedDateTime: new Date((record.wallTime || 0) * 1000).toISOString(),
      time: ["blocked", "dns", "connect", "send", "wait", "receive"].reduce((sum, k) => sum + Math.max(0, timings[k]), 0),
      request: {
        method: request.method || "GET", url, httpVersion: response.protocol || "HTTP/1.1", cookies: [],
        headers: headerList(request.headers, redactor), queryString: queryOf(url), headersSize: -1, bodySize: 0,
      },
      response: {
        status: response.status || 0, statusText: response.statusText || record.error || "", httpVersion: response.protocol || "HTTP/1.1",
        cookies: [], headers: headerList(response.headers, redactor),
        content: { size: record.size || 0, mimeType: response.mimeType || "x-unknown" },
        redirectURL: mask(record.redirectURL || "", redactor), headersSize: -1, bodySize: record.size || 0,
      },
      cache: {},
      timings,
      _resourceType: record.type,
    };
    if (request.hasPostData || request.postData) {
      const type = (request.headers && (request.headers["Content-Type"] || request.headers["content-type"])) || "";
      const text = typeof request.postData === "string" ? request.postData : "";
      entry.request.bodySize = text.length;
      entry.request.postData = keep && text.length <= LIMITS.POST_DATA_BYTES
        ? { mimeType: type, text: maskBody(text, redactor) }
        : { mimeType: type, text: "", comment: keep ? "not kept: over the size limit" : NOT_KEPT };
    }
    const content = entry.response.content;
    if (!keep) {
      if (TEXT_TYPE.test(content.mimeType)) content.comment = NOT_KEPT;
    } else if (record.body) {
      const text = await record.body; // decoded, or null (lib/har.js NetworkLog.held)
      // The limit holds for the body as decoded: a compressed one is far smaller on the wire (record.size).
      if (text !== null && text.length <= Math.min(LIMITS.BODY_BYTES, budget.left)) {
        budget.left -= text.length;
        content.text = mask(text, redactor);
      } else content.comment = "not kept: over the size limit or not text";
    }
    if (record.error) entry._error = record.error;
    return entry;
  }

  /** A HAR 1.2 log of these finished requests (NetworkLog.take()). `keepBodies`: false for a page with private
   * fields, or a test of each record (a page left before its step was handled: only the page in place's). */
  async function buildHar(records, { redactor = null, keepBodies = true } = {}) {
    const budget = { left: LIMITS.STEP_BODY_BYTES };
    const kept = records.slice(0, LIMITS.ENTRIES);
    const entries = [];
    let bytes = 1024; // the log's own fields
    for (const record of kept) {
      const entry = await toEntry(record, { redactor, keepBodies, budget });
      bytes += new TextEncoder().encode(JSON.stringify(entry)).length + 1;
      if (bytes > LIMITS.HAR_BYTES) break; // long URLs and headers (data: URLs), request bodies: the first that fit
      entries.push(entry);
    }
    const log = { version: "1.2", creator: CREATOR, pages: [], entries };
    const over = (records.over || 0) + records.length - entries.length;
    if (over > 0) log.comment = `${over} requests over the limit not kept`;
    return { log };
  }

  /** DOMSnapshot.captureSnapshot of the page through `send(method, params)`, its strings redacted. */
  async function captureDom(send, url, redactor = null) {
    const snapshot = await send("DOMSnapshot.captureSnapshot", { computedStyles: DOM_STYLES, includeDOMRects: true });
    const strings = (snapshot.strings || []).map((s) => mask(s, redactor));
    const documents = snapshot.documents || [];
    maskInputs(documents, snapshot.strings || [], strings, redactor);
    return { format: DOM_FORMAT, url: mask(url || "", redactor), computedStyles: DOM_STYLES, documents, strings };
  }

  /**
   * Whatever the page check found (a closed shadow root's or an autofilled field escapes it): the value (live or
   * attribute) of a password or credential-autocomplete input, and an input's or textarea's value that is a private
   * value as a whole (a short one too), become MASK in `strings` (wherever else the page shows it too). `raw`: the
   * strings before redaction.
   */
  function maskInputs(documents, raw, strings, redactor) {
    const masked = (at) => {
      if (typeof raw[at] === "string" && raw[at] !== "") strings[at] = redact.MASK;
    };
    for (const doc of documents) {
      const nodes = (doc && doc.nodes) || {};
      const attributes = Array.isArray(nodes.attributes) ? nodes.attributes : [];
      const secret = attributes.map((pairs) => isSecretInput(pairs, raw));
      attributes.forEach((pairs, node) => {
        if (!secret[node]) return;
        for (let i = 0; i + 1 < pairs.length; i += 2) if (String(raw[pairs[i]]).toLowerCase() === "value") masked(pairs[i + 1]);
      });
      for (const rare of [nodes.inputValue, nodes.textValue]) {
        if (!rare || !Array.isArray(rare.index) || !Array.isArray(rare.value)) continue;
        rare.value.forEach((at, i) => {
          if (secret[rare.index[i]] || (redactor && redactor.isValue(raw[at]))) masked(at);
        });
      }
    }
  }

  function isSecretInput(pairs, raw) {
    if (!Array.isArray(pairs)) return false;
    for (let i = 0; i + 1 < pairs.length; i += 2) {
      const name = String(raw[pairs[i]]).toLowerCase();
      const tokens = String(raw[pairs[i + 1]]).trim().toLowerCase().split(/\s+/);
      if (name === "type" && tokens[0] === "password") return true;
      if (name === "autocomplete" && privacy.SENSITIVE_AUTOCOMPLETE.has(tokens[tokens.length - 1])) return true;
    }
    return false;
  }

  const api = { LIMITS, SECRET_HEADERS, DOM_STYLES, DOM_FORMAT, NetworkLog, buildHar, captureDom, timingsOf };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.har = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
