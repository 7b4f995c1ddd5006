// The editor's side of the postMessage protocol that /static/pps-editor-client.js speaks
// from the shop's page (docs/embedding.md). Loaded on every editor step; it does nothing
// unless the editor is framed and the client has allowed origins.
//
// Safety: a message counts only when it comes from the parent window (event.source) and
// from one of the client's allowed origins (event.origin, checked against the list the
// server rendered into this script's data-allowed-origins); after the handshake only from
// the origin that connected. Answers go to that origin alone (postMessage's targetOrigin).
// Nothing here knows the API key: the page never had it.
//
// The work is done by window.ppsEditor (editor.js, EDITOR-API.md) where it offers a member;
// otherwise by the fallbacks below on the page's DOM hooks (form#editor-form, figure.page
// images), so the protocol works on every step.

const PROTOCOL = "pps-editor";
const VERSION = 1;

const script = document.querySelector("script[data-pps-bridge]");
const allowed = ((script && script.dataset.allowedOrigins) || "").split(/\s+/).filter(Boolean);
const framed = window.parent !== window;

let info = {};
try {
  info = JSON.parse((script && script.dataset.info) || "{}");
} catch (error) {
  info = {};
}

/** The origin that connected; null until the shop's page says "connect". */
let shop = null;

function editor() {
  return window.ppsEditor || {};
}

function has(name) {
  return typeof editor()[name] === "function";
}

function post(message) {
  if (shop !== null) {
    window.parent.postMessage({ protocol: PROTOCOL, version: VERSION, ...message }, shop);
  }
}

function emit(name, data) {
  post({ kind: "event", name: name, data: data });
}

class BridgeError extends Error {
  constructor(code, message, retryAfter, fields) {
    super(message);
    this.code = code;
    /** Seconds pps asked to wait (its Retry-After), else null. */
    this.retryAfter = retryAfter == null ? null : retryAfter;
    /** pps's messages per DataKey (its 422's fieldsByKey), else null. */
    this.fields = fieldsOf(fields);
  }
}

/** pps's messages per DataKey (a 422's ``fieldsByKey``: what the editor shows beside each
 *  field) as plain string lists, for the shop; null when there are none. */
function fieldsOf(given) {
  if (!given || typeof given !== "object" || Array.isArray(given)) {
    return null;
  }
  const fields = {};
  Object.keys(given).forEach((key) => {
    if (Array.isArray(given[key])) {
      fields[key] = given[key].map(String);
    }
  });
  return fields;
}

/** What the form's posts accept: pps's errors as JSON (its `message`, errors.wants_json),
 *  while the answers that are pages (the edit page after a save) stay pages. */
const FORM_ACCEPT = "application/json, text/html;q=0.9";

// -- the page's DOM hooks -------------------------------------------------------------------

function form() {
  return document.getElementById("editor-form");
}

function pageImages() {
  return Array.prototype.slice.call(document.querySelectorAll("figure.page img"));
}

function pageImage(pageNumber) {
  const images = pageImages();
  const found = images.find((img) => img.dataset.page === String(pageNumber - 1));
  const img = found || images[pageNumber - 1];
  if (!img) {
    throw new BridgeError("no-such-page", "This design has no page " + pageNumber + ".");
  }
  return img;
}

function field(key) {
  const editorForm = form();
  if (!editorForm) {
    throw new BridgeError("no-form", "This step has no form; open the embed or edit step.");
  }
  const control = editorForm.elements.namedItem(key) || editorForm.elements.namedItem("v:" + key);
  if (!control) {
    throw new BridgeError("unknown-key", "The design has no DataKey " + JSON.stringify(key) + ".");
  }
  return control;
}

function keyOf(control) {
  const name = control.getAttribute("name") || "";
  return name.startsWith("v:") ? name.slice(2) : name;
}

function dispatch(name, detail) {
  document.dispatchEvent(new CustomEvent(name, { detail: detail }));
}

function loaded(img) {
  if (img.complete && img.naturalWidth > 0) {
    return Promise.resolve(img);
  }
  return new Promise((resolve, reject) => {
    img.addEventListener("load", () => resolve(img), { once: true });
    img.addEventListener("error", () => reject(new BridgeError("image", "The page image failed.")), {
      once: true,
    });
  });
}

/** The pixels an image shows, as a PNG data URL (it is ours, so the canvas is clean). */
function pixels(img) {
  return loaded(img).then(() => {
    const canvas = document.createElement("canvas");
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    canvas.getContext("2d").drawImage(img, 0, 0);
    return canvas.toDataURL("image/png");
  });
}

let current = 1;

function showPage(pageNumber) {
  if (has("showPage")) {
    // editor.js answers false for a page it does not have.
    if (editor().showPage(pageNumber - 1) === false) {
      throw new BridgeError("no-such-page", "This design has no page " + pageNumber + ".");
    }
    return Promise.resolve(null);
  }
  const img = pageImage(pageNumber);
  img.scrollIntoView({ block: "nearest" });
  current = pageNumber;
  dispatch("pps:paged", { page: pageNumber - 1 });
  return Promise.resolve(null);
}

function pagePreview(pageNumber) {
  if (has("pagePreviewUrl")) {
    const url = editor().pagePreviewUrl(pageNumber - 1);
    if (!url) {
      throw new BridgeError("no-such-page", "This design has no page " + pageNumber + ".");
    }
    const img = new Image();
    img.src = url;
    return pixels(img);
  }
  return pixels(pageImage(pageNumber));
}

function updatePagePreview(pageNumber) {
  if (has("refreshPage")) {
    return Promise.resolve(editor().refreshPage(pageNumber - 1)).then(() => pagePreview(pageNumber));
  }
  const img = pageImage(pageNumber);
  const editorForm = form();
  const renderUrl = img.getAttribute("data-render-url");
  if (!editorForm || !renderUrl) {
    return pixels(img); // a saved page: it is what it shows
  }
  return fetch(renderUrl, {
    method: "POST",
    body: new URLSearchParams(new FormData(editorForm)),
    credentials: "same-origin",
    headers: { Accept: "image/png, application/json" },
  }).then((response) => {
    if (response.status !== 200) {
      return problem(response);
    }
    return response.blob().then((blob) => {
      const previous = img.getAttribute("data-blob");
      const url = URL.createObjectURL(blob);
      img.setAttribute("data-blob", url);
      img.src = url;
      if (previous) {
        URL.revokeObjectURL(previous);
      }
      return pixels(img);
    });
  });
}

function problem(response) {
  const retryAfter = parseInt(response.headers.get("Retry-After") || "", 10);
  return response
    .json()
    .catch(() => ({}))
    .then((body) => {
      const general = (body.general || []).join(" ");
      const message = [body.message, general].filter(Boolean).join(" ");
      throw new BridgeError(
        response.status === 422 ? "invalid" : "http-" + response.status,
        message || response.status + " " + response.statusText,
        retryAfter > 0 ? retryAfter : null,
        response.status === 422 ? body.fieldsByKey : null
      );
    });
}

function update(key, value) {
  const control = field(key); // unknown-key, no-form
  if (info.locked || control.disabled || control.closest("fieldset[disabled]")) {
    throw new BridgeError("locked", "This design is locked: it can no longer be changed.");
  }
  if (has("update")) {
    // editor.js sets the field and fires input and pps:changed; false: it refused.
    if (editor().update(key, value) === false) {
      throw new BridgeError("refused", "The editor did not take the value for " + key + ".");
    }
    return Promise.resolve(null);
  }
  control.value = value == null ? "" : String(value);
  control.dispatchEvent(new Event("input", { bubbles: true }));
  dispatch("pps:changed", { key: key, value: control.value });
  return Promise.resolve(null);
}

function variants() {
  if (has("variants")) {
    return Promise.resolve(editor().variants());
  }
  return Promise.resolve(info.variants || []);
}

function activeVariant() {
  return variants().then((list) => {
    const active = info.activeVariant;
    return list.find((item) => item.identifier === active || item.id === active) || null;
  });
}

function applyVariant(id) {
  if (has("applyVariant")) {
    return Promise.resolve(editor().applyVariant(id)).then(() => null);
  }
  throw new BridgeError("unsupported", "This editor cannot switch variants yet.");
}

let overlay = null;

function showLoader(text) {
  if (has("showLoader")) {
    return Promise.resolve(editor().showLoader(text)).then(() => null);
  }
  if (overlay === null) {
    overlay = document.createElement("div");
    overlay.id = "pps-bridge-loader";
    overlay.setAttribute("role", "status");
    overlay.setAttribute("aria-live", "polite");
    // CSSOM properties, not a style attribute: the page's CSP allows these.
    Object.assign(overlay.style, {
      position: "fixed",
      inset: "0",
      display: "flex",
      alignItems: "center",
      justifyContent: "center",
      background: "rgba(255, 255, 255, 0.85)",
      color: "#111",
      fontSize: "1.25rem",
      zIndex: "1000",
    });
    document.body.appendChild(overlay);
  }
  overlay.textContent = text || (script && script.dataset.msgLoading) || "";
  overlay.hidden = false;
  overlay.style.display = "flex"; // [hidden] alone loses to the display set above
  return Promise.resolve(null);
}

function hideLoader() {
  if (has("hideLoader")) {
    return Promise.resolve(editor().hideLoader()).then(() => null);
  }
  if (overlay !== null) {
    overlay.hidden = true;
    overlay.style.display = "none";
  }
  return Promise.resolve(null);
}

function formBody(action) {
  const body = new URLSearchParams(new FormData(form()));
  if (action) {
    body.set("action", action);
  }
  return body;
}

function save() {
  if (has("save")) {
    return Promise.resolve(editor().save()).then((result) => {
      if (result && typeof result.version === "number") {
        info.version = result.version;
      }
      return { version: info.version };
    });
  }
  if (!form()) {
    throw new BridgeError("no-form", "This step has no form; open the embed or edit step.");
  }
  // getAttribute: the form has a button named "action", which shadows form.action.
  return fetch(form().getAttribute("action"), {
    method: "POST",
    body: formBody("save"),
    credentials: "same-origin",
    headers: { Accept: FORM_ACCEPT },
  }).then((response) => {
    if (!response.ok) {
      return problem(response);
    }
    return response.text().then((html) => {
      // The answer is the edit page again: its bridge data names the saved version.
      const page = new DOMParser().parseFromString(html, "text/html");
      const next = page.querySelector("script[data-pps-bridge]");
      const saved = next ? JSON.parse(next.dataset.info || "{}") : {};
      if (typeof saved.version === "number") {
        info.version = saved.version;
      }
      dispatch("pps:saved", { version: info.version });
      return { version: info.version };
    });
  });
}

/** What Finish sends: the proof's form (its approval checkbox), else the edit form's
 *  values, else the preview's finish form. */
function finishBody() {
  const proof = document.getElementById("proof-form");
  if (proof) {
    const approval = proof.elements.namedItem("proof_approved");
    if (approval && approval.required && !approval.checked) {
      throw new BridgeError(
        "proof-not-approved",
        "The customer has not confirmed the proof yet (the checkbox on this step)."
      );
    }
    return new URLSearchParams(new FormData(proof));
  }
  if (info.proofRequired) {
    throw new BridgeError(
      "proof-required",
      "The customer approves the proof before Finish: show the proof step (/editor/" +
        info.hash +
        "/proof) in the frame."
    );
  }
  if (form()) {
    return formBody(null);
  }
  const finishForm = document.getElementById("finish-form");
  if (!finishForm) {
    throw new BridgeError("no-form", "This step cannot finish the design.");
  }
  return new URLSearchParams(new FormData(finishForm));
}

function finish() {
  const callback = (script && script.dataset.callback) || null;
  if (has("finish")) {
    return Promise.resolve(editor().finish()).then(() => ({ callback: callback }));
  }
  const url = script && script.dataset.finishUrl;
  if (info.locked || !url) {
    throw new BridgeError("locked", "This design is locked: it can no longer be changed.");
  }
  const body = finishBody();
  // The answer is a redirect to the shop's callback: the shop's page decides where to go,
  // so it is not followed here (an opaque redirect means the draft is finished).
  return fetch(url, {
    method: "POST",
    body: body,
    credentials: "same-origin",
    redirect: "manual",
    headers: { Accept: FORM_ACCEPT },
  }).then(
    (response) => {
      if (response.type !== "opaqueredirect" && !response.ok) {
        return problem(response);
      }
      dispatch("pps:finished", { callback: callback });
      return { callback: callback };
    }
  );
}

// -- objects: the design's images (and texts) for findEditorObjects / replaceWithFile -------

/** Names of the reference's block types for images (its BlockTypes.ASSET) and texts. */
const IMAGE_TYPES = ["asset", "assets", "image", "images", "picture"];
const TEXT_TYPES = ["text", "texts"];

/** An image of the design as the reference's asset object: `id` and `name` are the
 *  DataKey (the reference finds blocks by name), `title` its label; the box in mm; the
 *  image placed now (its URL, pixel size and resolution), else nulls. */
function imageObject(image) {
  return {
    id: image.key,
    type: "asset",
    blockType: "asset",
    assetType: "image",
    name: image.key,
    title: image.label,
    label: image.label,
    dataKey: image.key,
    pageNumber: image.page + 1,
    width: image.boxWidth,
    height: image.boxHeight,
    unit: "mm",
    required: image.required,
    file: image.file,
    previewUrl: image.url,
    imageWidth: image.imageWidth,
    imageHeight: image.imageHeight,
    dpi: image.dpi,
    restrictions: { dpi: { perfect: image.minDpi, error: image.minDpi } },
  };
}

function textObject(key) {
  const control = field(key);
  const known = (info.dataKeys || []).find((dataKey) => dataKey.name === key);
  const label = known ? known.label : key;
  return {
    id: key,
    type: "text",
    blockType: "text",
    name: key,
    title: label,
    label: label,
    dataKey: key,
    value: control.value,
    required: control.required,
  };
}

function editorObjects() {
  if (!form()) {
    throw new BridgeError("no-form", "This step has no form; open the embed or edit step.");
  }
  const images = has("imageObjects") ? editor().imageObjects().map(imageObject) : [];
  const imageKeys = images.map((item) => item.id);
  const texts = [];
  (info.dataKeys || []).forEach((dataKey) => {
    if (imageKeys.indexOf(dataKey.name) !== -1) {
      return;
    }
    let control = null;
    try {
      control = field(dataKey.name);
    } catch (error) {
      return; // not a field of this form
    }
    const tag = control.tagName;
    if (tag === "TEXTAREA" || (tag === "INPUT" && control.type !== "hidden" && control.type !== "color")) {
      texts.push(textObject(dataKey.name));
    }
  });
  return images.concat(texts);
}

/** The objects matching {type, id, name}: type `asset` (or `image`) for images, `text`
 *  for texts, none for all; a type pps has no objects of finds none. */
function findObjects(params) {
  const type = params.type;
  if (type != null && typeof type !== "string") {
    throw new BridgeError("bad-request", "type must be a string such as \"asset\" or \"text\".");
  }
  const wanted = type == null ? null : type.toLowerCase();
  return editorObjects().filter((item) => {
    if (wanted !== null) {
      const kinds = item.type === "asset" ? IMAGE_TYPES : TEXT_TYPES;
      if (kinds.indexOf(wanted) === -1) {
        return false;
      }
    }
    return (params.id == null || item.id === String(params.id)) && (params.name == null || item.name === String(params.name));
  });
}

/** Puts the shop's file into image object `id` as the customer's own upload would: the
 *  same POST /editor/<hash>/upload (checks, limits, rate limits), then the form's value,
 *  the live preview, undo and the autosave follow. Resolves the object as it is now. */
function replaceWithFile(params) {
  const id = params.id == null ? "" : String(params.id);
  const found = editorObjects().find((item) => item.id === id);
  if (!found) {
    throw new BridgeError("unknown-object", "The design has no object " + JSON.stringify(id) + ".");
  }
  if (found.type !== "asset") {
    throw new BridgeError(
      "wrong-type",
      "The object " + JSON.stringify(id) + " is a " + found.type + ", not an image: only images take a file."
    );
  }
  if (info.locked) {
    throw new BridgeError("locked", "This design is locked: it can no longer be changed.");
  }
  if (!(params.file instanceof Blob) || params.file.size === 0) {
    throw new BridgeError("bad-request", "file must be a File or Blob with the image's bytes.");
  }
  return editor()
    .replaceImage(id, params.file)
    .then((image) => imageObject(image));
}

function pages() {
  const images = pageImages();
  const count = typeof info.pages === "number" ? info.pages : images.length;
  const list = [];
  for (let index = 0; index < count; index += 1) {
    const img = images[index];
    list.push({
      pageNumber: index + 1,
      width: img ? Number(img.getAttribute("width")) : null,
      height: img ? Number(img.getAttribute("height")) : null,
    });
  }
  return Promise.resolve(list);
}

const METHODS = {
  info: () => Promise.resolve(draftInfo()),
  pages: pages,
  currentPage: () =>
    Promise.resolve(has("currentPage") ? Number(editor().currentPage()) + 1 : current),
  showPage: (params) => showPage(pageNumberOf(params)),
  pagePreview: (params) => pagePreview(pageNumberOf(params)),
  updatePagePreview: (params) => updatePagePreview(pageNumberOf(params)),
  update: (params) => update(String(params.key), params.value),
  variants: variants,
  activeVariant: activeVariant,
  applyVariant: (params) => applyVariant(params.id),
  showLoader: (params) => showLoader(params.text),
  hideLoader: hideLoader,
  save: save,
  finish: finish,
  findObjects: findObjects,
  replaceWithFile: replaceWithFile,
};

function pageNumberOf(params) {
  const number = Number(params && params.pageNumber);
  if (!Number.isInteger(number) || number < 1) {
    throw new BridgeError("bad-request", "pageNumber must be a page number counted from 1.");
  }
  return number;
}

function draftInfo() {
  const extra = has("info") ? editor().info() || {} : {};
  return { ...info, ...extra };
}

function answer(id, work) {
  let promise;
  try {
    promise = Promise.resolve(work());
  } catch (error) {
    promise = Promise.reject(error);
  }
  promise.then(
    (result) => post({ kind: "response", id: id, ok: true, result: result === undefined ? null : result }),
    (error) => {
      const refusal = {
        code: (error && error.code) || "failed",
        message: String((error && error.message) || error),
      };
      if (error && typeof error.retryAfter === "number") {
        refusal.retryAfter = error.retryAfter;
      }
      const fields = fieldsOf(error && error.fields); // the autosave's save() has them too
      if (fields !== null) {
        refusal.fields = fields;
      }
      post({ kind: "response", id: id, ok: false, error: refusal });
    }
  );
}

function onMessage(event) {
  // Only the parent, only an allowed origin, and after the handshake only the one that
  // connected; everything else is dropped without an answer.
  if (event.source !== window.parent || allowed.indexOf(event.origin) === -1) {
    return;
  }
  if (shop !== null && event.origin !== shop) {
    return;
  }
  const data = event.data;
  if (!data || typeof data !== "object" || data.protocol !== PROTOCOL) {
    return;
  }
  if (data.kind === "connect") {
    shop = event.origin;
    if (data.version !== VERSION) {
      post({ kind: "connected", ok: false, error: { code: "version", message: "This editor speaks version " + VERSION + "." } });
      shop = null;
      return;
    }
    post({ kind: "connected", ok: true, draftInfo: draftInfo() });
    emit("loaded", {
      draftInfo: draftInfo(),
      configuration: { show3DPreview: true, step: info.step },
    });
    return;
  }
  if (shop === null || data.kind !== "request" || data.version !== VERSION) {
    return;
  }
  const method = Object.prototype.hasOwnProperty.call(METHODS, data.method) ? METHODS[data.method] : null;
  if (method === null) {
    post({
      kind: "response",
      id: data.id,
      ok: false,
      error: { code: "unknown-method", message: "No method " + JSON.stringify(data.method) + "." },
    });
    return;
  }
  answer(data.id, () => method(data.params || {}));
}

function forward(domName, eventName, shape) {
  document.addEventListener(domName, (event) => emit(eventName, shape(event.detail || {})));
}

/**
 * A DataKey as the reference's "template data item", with every field its editor demo's
 * form reads (src/components/FormField.vue): `regex` is read as an array whatever the
 * field (`regexPattern.length`), so it is `[]` or `[pattern, null]`, never missing;
 * `options` is `[{value, label}]` for a choice, else `[]`; `value || defaultValue` fills
 * the input (pps has no template defaults apart from the draft's values: null).
 */
function tdi(key) {
  const known = (info.dataKeys || []).find((dataKey) => dataKey.name === key);
  const label = known ? known.label : key;
  const item = {
    identifier: key,
    label: label,
    type: "text",
    value: null,
    defaultValue: null,
    is_required: false,
    is_hidden: false,
    regex: [],
    options: [],
  };
  try {
    const control = field(key);
    item.value = control.value;
    item.is_required = control.required;
    if (control.tagName === "SELECT") {
      item.type = "select";
      item.options = Array.from(control.options, (option) => ({ value: option.value, label: option.label }));
    } else if (control.pattern) {
      item.regex = [control.pattern, null];
    }
  } catch (error) {
    // not on this step
  }
  return item;
}

function start() {
  if (!framed || allowed.length === 0) {
    return;
  }
  window.addEventListener("message", onMessage);
  forward("pps:paged", "paged", (detail) => {
    current = Number(detail.page) + 1;
    return { page: Number(detail.page), pageNumber: current };
  });
  forward("pps:scope-changed", "scope-changed", (detail) => ({ key: detail.key, tdis: [tdi(detail.key)] }));
  forward("pps:changed", "changed", (detail) => ({ key: detail.key, value: detail.value }));
  forward("pps:saved", "saved", (detail) => ({ version: detail.version }));
  forward("pps:finished", "finished", (detail) => ({ callback: detail.callback || null }));
  // A field taking the focus is a change of scope. editor.js reports it (pps:scope-changed)
  // where it runs; without it (a step it does not serve, or not loaded), here.
  const editorForm = form();
  if (editorForm) {
    let scope = null;
    document.addEventListener("pps:scope-changed", (event) => {
      scope = (event.detail || {}).key;
    });
    // Capture on the document: before the form's own listeners, which may report first.
    document.addEventListener(
      "focusin",
      (event) => {
        const target = event.target;
        if (!target || target.form !== editorForm || !target.name) {
          return;
        }
        if (target.type === "hidden" || target.tagName === "BUTTON" || has("showPage")) {
          return;
        }
        const key = keyOf(target);
        if (key !== scope) {
          dispatch("pps:scope-changed", { key: key });
        }
      },
      true
    );
  }
  // Say hello to whichever allowed origin the parent is on: a targetOrigin that does not
  // match drops the message, so only the parent's own origin hears it. Chromium and Safari
  // name the parent's origin (location.ancestorOrigins): then only that one is tried.
  const ancestors = window.location.ancestorOrigins;
  const parentOrigin = ancestors && ancestors.length ? ancestors[0] : null;
  const targets = allowed.indexOf(parentOrigin) !== -1 ? [parentOrigin] : allowed;
  targets.forEach((origin) => {
    window.parent.postMessage({ protocol: PROTOCOL, version: VERSION, kind: "hello" }, origin);
  });
}

start();
