// pps-editor-client.js: drive the pps editor inside an <iframe> on the shop's own page.
//
//   import { Connector, Events } from "https://pps.example/static/pps-editor-client.js";
//   const editor = await new Connector().connect(iframe, emitter);
//   emitter.on(Events.EDITOR_LOADED, ({ draftInfo }) => ...);
//   await editor.getFormEditor().update("name", "Ada");
//   await editor.save();
//
// The surface follows the reference product's editor client (Connector, Events, getPager,
// getFormEditor, getVariants, getLoader, save, findEditorObjects with the objects'
// replaceWithFile); docs/embedding.md describes it and the
// postMessage protocol under it. Pages are counted from 1 here, as in the reference.
//
// Safety: requests go to the editor's origin only (postMessage's targetOrigin), and only
// messages from the framed window on that origin are read; the editor checks the shop's
// origin against the client's allowed origins in turn. No key or token passes through.

export const CLIENT_VERSION = "1.2.0";
export const PROTOCOL = "pps-editor";
export const PROTOCOL_VERSION = 1;

/** Event names, emitted on the emitter given to connect(). */
export const Events = Object.freeze({
  EDITOR_LOADED: "editor.loaded",
  EDITOR_PAGES_PAGED: "editor.pages.paged",
  EDITOR_SCOPE_CHANGED: "editor.scope.changed",
  EDITOR_CHANGED: "editor.changed",
  EDITOR_SAVED: "editor.saved",
  EDITOR_FINISHED: "editor.finished",
});

const EVENT_NAMES = {
  loaded: Events.EDITOR_LOADED,
  paged: Events.EDITOR_PAGES_PAGED,
  "scope-changed": Events.EDITOR_SCOPE_CHANGED,
  changed: Events.EDITOR_CHANGED,
  saved: Events.EDITOR_SAVED,
  finished: Events.EDITOR_FINISHED,
};

/** A request the editor refused; ``code`` names why, ``retryAfter`` the seconds pps asked
 *  to wait (its Retry-After, on a 429 or 503), else null, ``fields`` pps's messages per
 *  DataKey for values it refused ({"<DataKey>": ["..."]}), else {} (docs/embedding.md). */
export class EditorError extends Error {
  constructor(code, message, retryAfter, fields) {
    super(message);
    this.name = "EditorError";
    this.code = code;
    this.retryAfter = typeof retryAfter === "number" ? retryAfter : null;
    this.fields = fields && typeof fields === "object" && !Array.isArray(fields) ? fields : {};
  }
}

function emitterOf(emitter) {
  if (emitter && typeof emitter.emit === "function") {
    return (name, data) => emitter.emit(name, data);
  }
  if (emitter && typeof emitter.dispatchEvent === "function") {
    return (name, data) => emitter.dispatchEvent(new CustomEvent(name, { detail: data }));
  }
  return () => {};
}

function filterOf(filter) {
  const given = filter || {};
  const params = {};
  ["type", "id", "name"].forEach((name) => {
    if (given[name] != null) {
      params[name] = given[name];
    }
  });
  return params;
}

function originOf(url) {
  return new URL(url, window.location.href).origin;
}

/** Which channel an EditorObject talks through: kept out of the object's own properties,
 *  so that a UI framework that walks them (Vue makes data reactive) meets plain data only. */
const channels = new WeakMap();

/** An object of the design (an image or a text), as findEditorObjects() resolves them:
 *  its fields (id, type, name, title, pageNumber, width, height in mm, previewUrl, ...)
 *  and, for images, replaceWithFile(). */
export class EditorObject {
  constructor(channel, data) {
    Object.assign(this, data);
    channels.set(this, channel);
  }

  /** Put ``file`` (a File or Blob the shop's page has, e.g. from an <input type=file>) into
   *  this image, as the customer's own upload in the editor would; resolves the object as
   *  it is then. Refused files reject with the upload's message. */
  replaceWithFile(file) {
    const channel = channels.get(this);
    return channel
      .request("replaceWithFile", { id: this.id, file: file })
      .then((data) => new EditorObject(channel, data));
  }
}

/** The editor in one iframe, as connect() resolves it. */
export class Editor {
  constructor(channel) {
    this._channel = channel;
    this._threeDee = null;
    const call = (method, params) => channel.request(method, params);
    this._pager = {
      get pages() {
        return call("pages");
      },
      current: () => call("currentPage"),
      showPage: (pageNumber) => call("showPage", { pageNumber: pageNumber }),
      getPagePreview: (pageNumber) => call("pagePreview", { pageNumber: pageNumber }),
      updatePagePreview: (pageNumber) => call("updatePagePreview", { pageNumber: pageNumber }),
    };
    this._form = {
      update: (key, value) => call("update", { key: key, value: value }),
    };
    this._variants = {
      getAll: () => call("variants"),
      getActive: () => call("activeVariant"),
      apply: (id) => call("applyVariant", { id: id }),
    };
    this._loader = {
      show: (text) => call("showLoader", { text: text == null ? null : String(text) }),
      hide: () => call("hideLoader"),
    };
  }

  /** The draft: hash, templateName, pages, dataKeys [{name, label}], variants, version. */
  info() {
    return this._channel.request("info");
  }

  getPager() {
    return this._pager;
  }

  getFormEditor() {
    return this._form;
  }

  getVariants() {
    return this._variants;
  }

  getLoader() {
    return this._loader;
  }

  /** The design's objects matching ``filter`` ({type, id, name}; type "asset" for images,
   *  "text" for texts, as the reference's BlockTypes): a list of EditorObject. */
  findEditorObjects(filter) {
    const channel = this._channel;
    return channel
      .request("findObjects", filterOf(filter))
      .then((list) => list.map((data) => new EditorObject(channel, data)));
  }

  /** The first object matching ``filter``; rejects with ``no-such-object`` when none does. */
  findEditorObject(filter) {
    return this.findEditorObjects(filter).then((list) => {
      if (list.length === 0) {
        throw new EditorError("no-such-object", "No object of the design matches " + JSON.stringify(filter) + ".");
      }
      return list[0];
    });
  }

  /** Save the draft; resolves {version}. */
  save() {
    return this._channel.request("save");
  }

  /** Finish the draft; resolves {callback} (the shop decides where to go next). */
  finish() {
    return this._channel.request("finish");
  }

  /** The reference's 3D iframe (its demo loads the editor's URL with /3d for /embed):
   *  kept, and reloaded after each save to show the change. A login handoff code in its
   *  URL was used up by the editor's own frame, whose session cookie (the same partition)
   *  opens the 3d step, so the code is dropped from the URL. */
  setThreeDeeElement(element) {
    this._threeDee = element || null;
    if (element && element.getAttribute("src")) {
      const url = new URL(element.src, window.location.href);
      if (url.origin === this._channel.origin && url.searchParams.has("handoff")) {
        url.searchParams.delete("handoff");
        element.src = url.href;
      }
    }
  }

  /** Stop listening; pending requests are rejected. */
  disconnect() {
    this._channel.close();
  }
}

class Channel {
  constructor(iframe, origin, emit, timeout) {
    this.iframe = iframe;
    this.origin = origin;
    this.emit = emit;
    this.timeout = timeout;
    this.nextId = 1;
    this.pending = new Map();
    this.connected = false;
    this.retry = null;
    this.onConnected = null;
    this.editor = null;
    this.listener = (event) => this.receive(event);
    window.addEventListener("message", this.listener);
  }

  send(message) {
    const target = this.iframe.contentWindow;
    if (target) {
      target.postMessage({ protocol: PROTOCOL, version: PROTOCOL_VERSION, ...message }, this.origin);
    }
  }

  /** Knock until the editor answers (its script may not run yet, or it reloaded). */
  knock() {
    if (this.retry !== null) {
      return;
    }
    this.send({ kind: "connect" });
    this.retry = window.setInterval(() => this.send({ kind: "connect" }), 250);
  }

  stopKnocking() {
    if (this.retry !== null) {
      window.clearInterval(this.retry);
      this.retry = null;
    }
  }

  receive(event) {
    // Only the framed window, only on the editor's origin, only our protocol.
    if (event.source !== this.iframe.contentWindow || event.origin !== this.origin) {
      return;
    }
    const data = event.data;
    if (!data || typeof data !== "object" || data.protocol !== PROTOCOL) {
      return;
    }
    if (data.version !== PROTOCOL_VERSION) {
      return;
    }
    if (data.kind === "hello") {
      // A new document in the frame (first load, a reload, another step): connect again.
      this.connected = false;
      this.knock();
    } else if (data.kind === "connected") {
      this.stopKnocking();
      if (data.ok === false) {
        this.fail(new EditorError(data.error.code, data.error.message));
        return;
      }
      this.connected = true;
      if (this.onConnected) {
        this.onConnected(data);
      }
    } else if (data.kind === "response") {
      const waiting = this.pending.get(data.id);
      if (waiting) {
        this.pending.delete(data.id);
        window.clearTimeout(waiting.timer);
        if (data.ok) {
          waiting.resolve(data.result);
        } else {
          const error = data.error;
          waiting.reject(new EditorError(error.code, error.message, error.retryAfter, error.fields));
        }
      }
    } else if (data.kind === "event" && Object.prototype.hasOwnProperty.call(EVENT_NAMES, data.name)) {
      if (data.name === "saved" && this.editor && this.editor._threeDee) {
        const frame = this.editor._threeDee;
        frame.src = frame.src; // the 3d step shows saved pages
      }
      this.emit(EVENT_NAMES[data.name], data.data);
    }
  }

  request(method, params) {
    if (!this.connected) {
      return Promise.reject(new EditorError("not-connected", "The editor is not connected (yet)."));
    }
    const id = this.nextId;
    this.nextId += 1;
    return new Promise((resolve, reject) => {
      const timer = window.setTimeout(() => {
        this.pending.delete(id);
        reject(new EditorError("timeout", "The editor did not answer " + method + "."));
      }, this.timeout);
      this.pending.set(id, { resolve: resolve, reject: reject, timer: timer });
      this.send({ kind: "request", id: id, method: method, params: params || {} });
    });
  }

  fail(error) {
    if (this.onFailed) {
      this.onFailed(error);
    }
  }

  close() {
    this.stopKnocking();
    window.removeEventListener("message", this.listener);
    this.pending.forEach((waiting) => {
      window.clearTimeout(waiting.timer);
      waiting.reject(new EditorError("closed", "Disconnected."));
    });
    this.pending.clear();
  }
}

export class Connector {
  /**
   * @param {{origin?: string, timeout?: number}} [options] origin: the editor's origin
   *   (pps's base URL); by default the origin of the iframe's src. Give it when the iframe
   *   starts on a page of the shop that redirects to pps. timeout: per request and for the
   *   first connection, in milliseconds (default 30000).
   */
  constructor(options) {
    const settings = options || {};
    this.origin = settings.origin ? originOf(settings.origin) : null;
    this.timeout = settings.timeout || 30000;
  }

  /** Resolves the Editor once the page in ``iframe`` answered; events go to ``emitter``
   *  (anything with emit(name, data), or an EventTarget: CustomEvent with the data as detail). */
  connect(iframe, emitter) {
    const src = iframe.getAttribute("src") ? iframe.src : "";
    const origin = this.origin || (src ? originOf(src) : null);
    if (!origin || origin === "null") {
      return Promise.reject(new EditorError("no-origin", "Set the iframe's src or pass {origin}."));
    }
    const channel = new Channel(iframe, origin, emitterOf(emitter), this.timeout);
    return new Promise((resolve, reject) => {
      const timer = window.setTimeout(() => {
        channel.close();
        reject(new EditorError("timeout", "The editor at " + origin + " did not answer."));
      }, this.timeout);
      channel.onFailed = (error) => {
        window.clearTimeout(timer);
        channel.close();
        reject(error);
      };
      channel.onConnected = () => {
        window.clearTimeout(timer);
        channel.onConnected = null;
        channel.editor = new Editor(channel);
        resolve(channel.editor);
      };
      channel.knock();
    });
  }
}

export default Connector;
