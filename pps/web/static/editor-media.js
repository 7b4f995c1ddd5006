// The editor's images and choices (editor_media.html): upload by file picker or drag and
// drop, crop by dragging, zoom slider and keys, a resolution warning under 300 dpi, and a
// live preview when a colour, font or size is picked. Without this script the form still
// uploads (the "Upload image" button), picks and saves.
(function () {
  "use strict";

  var KEY_STEP = 0.02; // arrow keys move by this share of the image
  var ZOOM_STEP = 0.1;

  function numberOr(text, fallback) {
    var value = parseFloat(text);
    return isNaN(value) ? fallback : value;
  }

  function changed(input, key) {
    // editor.js re-renders the pages showing the field whose id the input event names.
    input.dispatchEvent(new Event("input", { bubbles: true }));
    document.dispatchEvent(
      new CustomEvent("pps:changed", { detail: { key: key, value: input.value } })
    );
  }

  function setupImage(root, group, form) {
    var key = group.getAttribute("data-key");
    var hidden = group.querySelector("input[type=hidden]");
    var picker = group.querySelector("input[type=file]");
    var drop = group.querySelector(".media-drop");
    var cropBox = group.querySelector(".media-crop");
    var frame = group.querySelector(".media-frame");
    var photo = group.querySelector(".media-photo");
    var zoom = group.querySelector(".media-zoom");
    var dpiText = group.querySelector(".media-dpi");
    var error = group.querySelector(".field-error");
    var button = group.querySelector(".media-upload");
    var minDpi = parseFloat(root.getAttribute("data-min-dpi")) || 300;
    var boxW = parseFloat(group.getAttribute("data-box-width"));
    var boxH = parseFloat(group.getAttribute("data-box-height"));
    var aspect = boxW / boxH;
    var state = {
      file: group.getAttribute("data-file") || "",
      width: parseFloat(group.getAttribute("data-width")) || 0,
      height: parseFloat(group.getAttribute("data-height")) || 0,
      zoom: parseFloat(group.getAttribute("data-zoom")) || 1,
      cx: numberOr(group.getAttribute("data-cx"), 0.5),
      cy: numberOr(group.getAttribute("data-cy"), 0.5),
      vector: false,
    };
    if (button) {
      // The script uploads as soon as a file is chosen; and without this button, Save is
      // the form's default again (Enter in a field saves).
      button.remove();
    }
    frame.style.aspectRatio = String(aspect);
    // The page sends the crop view hidden (without this script it cannot crop); shown for
    // an image placed already.
    cropBox.hidden = !state.file;

    function crop() {
      var baseW = state.width / state.height > aspect ? state.height * aspect : state.width;
      var w = baseW / state.zoom;
      var h = w / aspect;
      var x = Math.min(Math.max(state.cx * state.width - w / 2, 0), state.width - w);
      var y = Math.min(Math.max(state.cy * state.height - h / 2, 0), state.height - h);
      state.cx = (x + w / 2) / state.width;
      state.cy = (y + h / 2) / state.height;
      return { x: x, y: y, width: w, height: h };
    }

    function round(n) {
      return Math.round(n * 100) / 100;
    }

    function draw() {
      if (!state.file || !state.width) {
        return null;
      }
      var c = crop();
      var scale = frame.clientWidth / c.width;
      photo.style.width = state.width * scale + "px";
      photo.style.height = state.height * scale + "px";
      photo.style.left = -c.x * scale + "px";
      photo.style.top = -c.y * scale + "px";
      return c;
    }

    function say(c) {
      if (!state.file) {
        dpiText.textContent = "";
        return;
      }
      if (state.vector) {
        dpiText.textContent = root.getAttribute("data-msg-vector");
        dpiText.classList.remove("low");
        return;
      }
      var dpi = Math.round(c.width / (boxW / 25.4));
      var low = dpi < minDpi;
      dpiText.classList.toggle("low", low);
      dpiText.textContent = root
        .getAttribute(low ? "data-msg-low" : "data-msg-dpi")
        .replace("{dpi}", String(dpi));
    }

    function commit() {
      var c = draw();
      if (!c) {
        return;
      }
      say(c);
      hidden.value = JSON.stringify({
        file: state.file,
        crop: { x: round(c.x), y: round(c.y), width: round(c.width), height: round(c.height) },
      });
      written = hidden.value;
      sizes[state.file] = { width: state.width, height: state.height, vector: state.vector };
      changed(hidden, key);
    }

    // Undo and redo (editor-autosave.js) set the value from outside: the crop view follows
    // it, so that the next drag or zoom starts from the value shown, not an older one.
    var written = hidden.value;
    var sizes = {};
    if (state.file) {
      sizes[state.file] = { width: state.width, height: state.height, vector: false };
    }

    function imageUrl(file) {
      return root.getAttribute("data-upload-url").replace(/upload$/, "image/" + file);
    }

    function follow() {
      if (hidden.value === written) {
        return;
      }
      written = hidden.value;
      var value = null;
      try {
        value = JSON.parse(hidden.value);
      } catch (error) {
        value = null;
      }
      if (!value || !value.file || !value.crop) {
        state.file = "";
        cropBox.hidden = true;
        say(null);
        return;
      }
      function place() {
        var c = value.crop;
        var baseW = state.width / state.height > aspect ? state.height * aspect : state.width;
        state.zoom = c.width > 0 ? baseW / c.width : 1;
        state.cx = (c.x + c.width / 2) / state.width;
        state.cy = (c.y + c.height / 2) / state.height;
        zoom.value = String(state.zoom);
        cropBox.hidden = false;
        say(draw());
      }
      var known = sizes[value.file];
      var sameFile = value.file === state.file;
      state.file = value.file;
      if (sameFile && known) {
        place();
        return;
      }
      photo.onload = function () {
        photo.onload = null;
        var size = sizes[value.file] || {
          width: photo.naturalWidth,
          height: photo.naturalHeight,
          vector: false,
        };
        sizes[value.file] = size;
        state.width = size.width;
        state.height = size.height;
        state.vector = size.vector;
        place();
      };
      cropBox.hidden = false;
      photo.src = imageUrl(value.file);
    }
    hidden.addEventListener("input", follow);

    /** Uploads ``file`` through POST /editor/<hash>/upload (its checks, limits and rate
     *  limits) and puts it into the crop frame and the form as a fresh pick: a Promise of
     *  the image's object (see object()), rejected with the upload's message and a code. */
    function upload(file) {
      var body = new FormData();
      body.append("csrf_token", form.querySelector("input[name=csrf_token]").value);
      body.append("upload", key);
      body.append("image:" + key, file, file.name || "image");
      error.textContent = "";
      dpiText.textContent = root.getAttribute("data-msg-uploading");
      group.setAttribute("aria-busy", "true");
      return fetch(root.getAttribute("data-upload-url"), {
        method: "POST",
        body: body,
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      })
        .then(
          function (response) {
            return response
              .json()
              .catch(function () {
                return {};
              })
              .then(function (data) {
                if (!response.ok) {
                  var messages = (data.errors && data.errors[key]) || [
                    data.message || response.status + " " + response.statusText,
                  ];
                  error.textContent = messages.join(" ");
                  group.classList.add("invalid");
                  dpiText.textContent = "";
                  throw coded(response.status === 422 ? "invalid" : "http-" + response.status, error.textContent);
                }
                return place(data);
              });
          },
          function (reason) {
            var message = root.getAttribute("data-msg-failed").replace("{reason}", String(reason));
            error.textContent = message;
            throw coded("failed", message);
          }
        )
        .finally(function () {
          group.removeAttribute("aria-busy");
        });
    }

    function place(data) {
      group.classList.remove("invalid");
      state.file = data.identifier;
      state.width = data.width;
      state.height = data.height;
      state.vector = !!data.vector;
      state.zoom = 1;
      state.cx = 0.5;
      state.cy = 0.5;
      zoom.value = "1";
      cropBox.hidden = false;
      return new Promise(function (resolve, reject) {
        photo.onload = function () {
          photo.onload = photo.onerror = null;
          commit();
          resolve(object());
        };
        photo.onerror = function () {
          photo.onload = photo.onerror = null;
          reject(coded("failed", "The uploaded image did not load."));
        };
        photo.src = data.url;
      });
    }

    /** The image as the shop's page sees it (editor-bridge.js: findEditorObjects). */
    function object() {
      var c = state.file && state.width ? crop() : null;
      return {
        key: key,
        label: group.getAttribute("data-label") || key,
        page: parseInt(group.getAttribute("data-page"), 10) || 0,
        required: group.getAttribute("data-required") === "true",
        boxWidth: boxW,
        boxHeight: boxH,
        file: state.file || null,
        url: state.file ? new URL(imageUrl(state.file), window.location.href).href : null,
        imageWidth: state.file ? state.width : null,
        imageHeight: state.file ? state.height : null,
        dpi: c && !state.vector ? Math.round(c.width / (boxW / 25.4)) : null,
        minDpi: minDpi,
      };
    }

    function pick(file) {
      if (file) {
        upload(file).catch(function () {
          // shown beside the image already
        });
      }
    }

    picker.addEventListener("change", function () {
      pick(picker.files && picker.files[0]);
    });
    ["dragenter", "dragover"].forEach(function (name) {
      drop.addEventListener(name, function (event) {
        event.preventDefault();
        drop.classList.add("over");
      });
    });
    ["dragleave", "drop"].forEach(function (name) {
      drop.addEventListener(name, function () {
        drop.classList.remove("over");
      });
    });
    drop.addEventListener("drop", function (event) {
      event.preventDefault();
      var files = event.dataTransfer && event.dataTransfer.files;
      pick(files && files[0]);
    });

    var dragging = null;
    frame.addEventListener("pointerdown", function (event) {
      if (!state.file) {
        return;
      }
      dragging = { x: event.clientX, y: event.clientY };
      frame.setPointerCapture(event.pointerId);
      event.preventDefault();
    });
    frame.addEventListener("pointermove", function (event) {
      if (!dragging) {
        return;
      }
      var c = crop();
      var scale = frame.clientWidth / c.width;
      state.cx -= (event.clientX - dragging.x) / scale / state.width;
      state.cy -= (event.clientY - dragging.y) / scale / state.height;
      dragging = { x: event.clientX, y: event.clientY };
      draw();
    });
    function endDrag() {
      if (dragging) {
        dragging = null;
        commit();
      }
    }
    frame.addEventListener("pointerup", endDrag);
    frame.addEventListener("pointercancel", endDrag);
    frame.addEventListener("keydown", function (event) {
      var moves = {
        ArrowLeft: [-KEY_STEP, 0],
        ArrowRight: [KEY_STEP, 0],
        ArrowUp: [0, -KEY_STEP],
        ArrowDown: [0, KEY_STEP],
      };
      if (moves[event.key]) {
        state.cx += moves[event.key][0];
        state.cy += moves[event.key][1];
      } else if (event.key === "+" || event.key === "=") {
        state.zoom = Math.min(parseFloat(zoom.max), state.zoom + ZOOM_STEP);
        zoom.value = String(state.zoom);
      } else if (event.key === "-") {
        state.zoom = Math.max(1, state.zoom - ZOOM_STEP);
        zoom.value = String(state.zoom);
      } else {
        return;
      }
      event.preventDefault();
      commit();
    });
    zoom.addEventListener("input", function (event) {
      event.stopPropagation(); // the slider is no field of its own
      state.zoom = parseFloat(zoom.value) || 1;
      commit();
    });
    if (state.file) {
      state.vector = dpiText.textContent === root.getAttribute("data-msg-vector");
      sizes[state.file].vector = state.vector;
      if (photo.complete) {
        draw();
      } else {
        photo.addEventListener("load", draw);
      }
    }
    window.addEventListener("resize", draw);
    return { key: key, object: object, upload: upload };
  }

  function coded(code, message) {
    var error = new Error(message);
    error.code = code;
    return error;
  }

  /** For the shop's page (pps-editor-client.js, through editor-bridge.js): the image
   *  objects, and a file put into one as if the customer had picked it here. */
  function offerImages(images) {
    var api = (window.ppsEditor = window.ppsEditor || {});
    api.imageObjects = function () {
      return images.map(function (image) {
        return image.object();
      });
    };
    api.replaceImage = function (key, file) {
      var image = images.filter(function (item) {
        return item.key === key;
      })[0];
      if (!image) {
        return Promise.reject(coded("unknown-object", "The design has no image " + JSON.stringify(key) + "."));
      }
      return image.upload(file);
    };
  }

  function start() {
    var root = document.getElementById("editor-media");
    var form = document.getElementById("editor-form");
    if (!root || !form || !window.fetch || !window.FormData) {
      return;
    }
    offerImages(
      Array.prototype.map.call(root.querySelectorAll(".media-image"), function (group) {
        return setupImage(root, group, form);
      })
    );
    // A colour picked in a radio group: re-render the pages through the group's id.
    Array.prototype.forEach.call(root.querySelectorAll("fieldset.media-choice"), function (group) {
      group.addEventListener("change", function (event) {
        event.stopPropagation();
        group.value = event.target.value;
        changed(group, event.target.name.replace(/^v:/, ""));
      });
    });
    var variants = root.querySelector(".media-variants");
    if (variants) {
      var saveVariant = function () {
        var save = form.querySelector("button[name=action][value=save]");
        if (save && form.requestSubmit) {
          form.requestSubmit(save);
        }
      };
      variants.addEventListener("change", saveVariant);
      // For the shop's page (pps-editor-client.js, through editor-bridge.js).
      var api = (window.ppsEditor = window.ppsEditor || {});
      var radios = function () {
        return Array.prototype.slice.call(variants.querySelectorAll("input[name=variant]"));
      };
      api.variants = function () {
        return radios().map(function (radio) {
          return {
            identifier: radio.value,
            name: radio.parentNode.textContent.trim(),
            active: radio.checked,
          };
        });
      };
      // Picks the variant and saves the form with it (the page reloads on the new version).
      api.applyVariant = function (id) {
        var radio = radios().filter(function (item) {
          return item.value === String(id);
        })[0];
        if (!radio || radio.disabled) {
          return Promise.reject(new Error("The template has no variant " + id + "."));
        }
        if (!radio.checked) {
          radio.checked = true;
          saveVariant();
        }
        return Promise.resolve(null);
      };
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
