// The editor on the card: hotspots over the page images, in-place editing, a preview that
// follows every key stroke, zoom, guides, a page switcher, and window.ppsEditor (see
// docs/editor.md, "The editor's script API"). A static file (not an inline script) so the
// page runs under a Content-Security-Policy without 'unsafe-inline'; positions travel as
// data-* attributes and become CSS custom properties here (style attributes are forbidden).
// Everything works without it: the form posts normally and the images show the saved design.
(function () {
  "use strict";

  // A preview request still open after this long is given up and sent again.
  var STUCK_MS = 5000;
  var PHONE = "(max-width: 44rem)";

  var api = window.ppsEditor || {};
  window.ppsEditor = api;

  function emit(name, detail) {
    document.dispatchEvent(new CustomEvent(name, { detail: detail }));
  }

  function toArray(list) {
    return Array.prototype.slice.call(list || []);
  }

  function start() {
    var root = document.getElementById("editor");
    if (!root) {
      return;
    }
    var form = document.getElementById("editor-form");
    var locked = root.getAttribute("data-locked") === "true";
    var canvas = document.getElementById("canvas");
    var stage = document.getElementById("canvas-stage");
    var status = document.getElementById("preview-status");
    var images = toArray(document.querySelectorAll("img.page-image"));
    images.sort(function (a, b) {
      return Number(a.getAttribute("data-page")) - Number(b.getAttribute("data-page"));
    });
    var live = !!(form && !locked && window.fetch && window.URLSearchParams && window.AbortController);
    var seq = 0; // value changes seen; an image's data-seq says which one it shows
    var current = 0;
    var scope = null;
    var pages = images.map(function (img) {
      return {
        img: img,
        figure: img.closest("figure"),
        controller: null,
        sentAt: 0,
        dirty: false,
        broken: img.complete && img.naturalWidth === 0 && !!img.getAttribute("src"),
        promise: Promise.resolve(),
        retry: null,
      };
    });

    function say(text) {
      if (status && text !== null) {
        status.textContent = text;
      }
    }

    function message(name) {
      return root.getAttribute("data-msg-" + name) || "";
    }

    // -- fields ----------------------------------------------------------------------

    function valueFields() {
      return form ? toArray(form.querySelectorAll("input[name^='v:'], textarea[name^='v:']")) : [];
    }

    function fieldFor(key) {
      return form ? form.elements.namedItem("v:" + key) : null;
    }

    function keyOf(field) {
      return field && field.name && field.name.indexOf("v:") === 0 ? field.name.slice(2) : null;
    }

    function labelOf(field) {
      var label = field && document.querySelector("label[for='" + field.id + "']");
      if (!label) {
        return keyOf(field) || "";
      }
      var first = label.firstChild;
      return (first && first.nodeType === 3 ? first.nodeValue : label.textContent).trim();
    }

    function showErrors(byField) {
      valueFields().forEach(function (input) {
        var messages = (byField && byField[input.id]) || [];
        var target = document.getElementById(input.id + "-error");
        if (target) {
          target.textContent = messages.join(" ");
        }
        if (messages.length) {
          input.setAttribute("aria-invalid", "true");
          input.parentNode.classList.add("invalid");
        } else {
          input.removeAttribute("aria-invalid");
          input.parentNode.classList.remove("invalid");
        }
      });
    }

    function fieldsOf(img) {
      var list = img.getAttribute("data-fields") || "";
      return list ? list.split(" ") : [];
    }

    // -- the preview: one request in flight per page, the latest value sent next -------
    // A render on the server cannot be called off, so aborting on every key stroke would
    // only waste renders and, typing faster than a render, show nothing until a pause.
    // Instead the running request finishes (and is shown: it is newer than the image),
    // then the latest values go out at once. Requests that hang are aborted.

    function showImage(page, blob, shownSeq) {
      var img = page.img;
      var previous = img.getAttribute("data-blob");
      var url = URL.createObjectURL(blob);
      img.setAttribute("data-blob", url);
      img.setAttribute("data-seq", String(shownSeq));
      img.src = url;
      var thumb = document.querySelector("img[data-thumb='" + img.getAttribute("data-page") + "']");
      if (thumb) {
        thumb.src = url;
      }
      page.broken = false;
      if (previous) {
        URL.revokeObjectURL(previous);
      }
    }

    function render(index) {
      var page = pages[index];
      if (!live || !page) {
        return Promise.resolve(false);
      }
      if (page.controller) {
        if (Date.now() - page.sentAt < STUCK_MS) {
          page.dirty = true;
          return page.promise;
        }
        page.controller.abort();
      }
      if (page.retry !== null) {
        clearTimeout(page.retry);
        page.retry = null;
      }
      page.dirty = false;
      var controller = new AbortController();
      var sentSeq = seq;
      page.controller = controller;
      page.sentAt = Date.now();
      page.figure.setAttribute("aria-busy", "true");
      var body = new URLSearchParams(new FormData(form));
      page.promise = fetch(page.img.getAttribute("data-render-url"), {
        method: "POST",
        body: body,
        credentials: "same-origin",
        // JPEG: the server encodes it several times faster than PNG (docs/editor.md).
        headers: { Accept: "image/jpeg, image/png;q=0.9, application/json;q=0.8" },
        signal: controller.signal,
      })
        .then(function (response) {
          if (response.status === 200) {
            var missing = (response.headers.get("X-Pps-Missing") || "").split(" ");
            return response.blob().then(function (blob) {
              if (page.controller !== controller) {
                return false; // given up on: a newer request is out
              }
              showImage(page, blob, sentSeq);
              var notes = {};
              missing.forEach(function (id) {
                if (id) {
                  notes[id] = [message("missing")];
                }
              });
              showErrors(notes);
              say(message("updated"));
              return true;
            });
          }
          if (response.status === 422) {
            return response.json().then(function (problem) {
              showErrors(problem.fields || {});
              var general = (problem.general || []).join(" ");
              say(message("errors") + (general ? " " + general : ""));
              return false;
            });
          }
          if (response.status === 429 || response.status === 503) {
            var wait = parseInt(response.headers.get("Retry-After") || "1", 10) || 1;
            say(message("busy"));
            page.retry = setTimeout(function () {
              page.retry = null;
              render(index);
            }, wait * 1000);
            return false;
          }
          say(message("failed").replace("{reason}", response.status + " " + response.statusText));
          return false;
        })
        .catch(function (error) {
          if (!error || error.name !== "AbortError") {
            say(message("failed").replace("{reason}", String(error)));
          }
          return false;
        })
        .then(function (shown) {
          if (page.controller === controller) {
            page.controller = null;
            page.figure.removeAttribute("aria-busy");
            if (page.dirty) {
              return render(index);
            }
          }
          return shown;
        });
      return page.promise;
    }

    // -- the card: hotspots, in-place editing, zoom, guides, pages ----------------------

    var editing = null; // {spot, field, input}

    function setBox(element, box) {
      var parts = (box || "").split(" ");
      if (parts.length === 4) {
        element.style.setProperty("--l", parts[0] + "%");
        element.style.setProperty("--t", parts[1] + "%");
        element.style.setProperty("--w", parts[2] + "%");
        element.style.setProperty("--h", parts[3] + "%");
      }
    }

    function spotsFor(fieldId) {
      return toArray(document.querySelectorAll(".hotspot[data-field='" + fieldId + "']"));
    }

    function highlight(fieldId) {
      toArray(document.querySelectorAll(".hotspot.active, .field.active")).forEach(function (el) {
        el.classList.remove("active");
      });
      if (!fieldId) {
        return;
      }
      spotsFor(fieldId).forEach(function (spot) {
        spot.classList.add("active");
      });
      var field = document.getElementById(fieldId);
      if (field && field.parentNode.classList.contains("field")) {
        field.parentNode.classList.add("active");
      }
    }

    function changeScope(field) {
      var key = keyOf(field);
      if (key !== null && key !== scope) {
        scope = key;
        emit("pps:scope-changed", { key: key });
      }
    }

    function closeEditing(returnFocus) {
      if (!editing) {
        return;
      }
      var was = editing;
      editing = null;
      if (was.input.parentNode) {
        was.input.parentNode.removeChild(was.input);
      }
      if (returnFocus) {
        was.spot.focus();
      }
    }

    function openEditing(spot) {
      var field = document.getElementById(spot.getAttribute("data-field"));
      if (!field || field.disabled || locked) {
        return;
      }
      closeEditing(false);
      var multiline = field.tagName === "TEXTAREA";
      var input = document.createElement(multiline ? "textarea" : "input");
      if (!multiline) {
        input.type = "text";
        input.setAttribute("autocomplete", "off");
      } else {
        input.rows = 3;
      }
      input.className = "inplace";
      input.value = field.value;
      if (field.maxLength > 0) {
        input.maxLength = field.maxLength;
      }
      input.setAttribute("aria-label", labelOf(field));
      input.setAttribute("data-field", field.id);
      setBox(input, spot.getAttribute("data-box"));
      spot.parentNode.appendChild(input);
      editing = { spot: spot, field: field, input: input };
      input.addEventListener("input", function () {
        field.value = input.value;
        field.dispatchEvent(new Event("input", { bubbles: true }));
      });
      input.addEventListener("keydown", function (event) {
        if (event.key === "Escape" || (event.key === "Enter" && !multiline)) {
          event.preventDefault();
          closeEditing(true);
        }
      });
      input.addEventListener("blur", function () {
        if (editing && editing.input === input) {
          closeEditing(false);
        }
      });
      input.focus();
      var end = input.value.length;
      input.setSelectionRange(end, end);
      highlight(field.id);
      changeScope(field);
      say(message("editing").replace("{key}", labelOf(field)));
    }

    function setUpHotspots() {
      toArray(document.querySelectorAll(".hotspot")).forEach(function (spot) {
        setBox(spot, spot.getAttribute("data-box"));
        spot.addEventListener("click", function () {
          openEditing(spot);
        });
        spot.addEventListener("focus", function () {
          var field = document.getElementById(spot.getAttribute("data-field"));
          highlight(spot.getAttribute("data-field"));
          changeScope(field);
        });
      });
      toArray(document.querySelectorAll(".hotspots")).forEach(function (layer) {
        layer.hidden = locked;
      });
    }

    function setUpCanvas() {
      if (!canvas || !stage) {
        return;
      }
      var guides = (canvas.getAttribute("data-guides") || "").split(" ");
      if (guides.length === 4) {
        canvas.style.setProperty("--bleed-x", guides[0] + "%");
        canvas.style.setProperty("--bleed-y", guides[1] + "%");
        canvas.style.setProperty("--safe-x", guides[2] + "%");
        canvas.style.setProperty("--safe-y", guides[3] + "%");
      }
      var size = (canvas.getAttribute("data-size-mm") || "").split(" ");
      if (size.length === 2 && Number(size[1]) > 0) {
        stage.style.setProperty("--page-w-mm", size[0]);
        stage.style.setProperty("--aspect", String(Number(size[0]) / Number(size[1])));
      }
      var tools = canvas.querySelector(".canvas-tools");
      if (tools) {
        tools.hidden = false;
      }
      toArray(canvas.querySelectorAll("button[data-zoom]")).forEach(function (button) {
        button.addEventListener("click", function () {
          zoom(button.getAttribute("data-zoom"));
        });
      });
      var toggle = document.getElementById("guides-toggle");
      if (toggle) {
        toggle.addEventListener("change", function () {
          showGuides(toggle.checked);
        });
      }
      var switcher = canvas.querySelector(".page-switcher");
      if (switcher && pages.length > 1) {
        switcher.hidden = false;
        canvas.classList.add("paged");
        toArray(switcher.querySelectorAll("[data-show-page]")).forEach(function (button) {
          button.addEventListener("click", function () {
            showPage(Number(button.getAttribute("data-show-page")));
          });
        });
      }
    }

    function zoom(level) {
      if (!stage || ["fit", "1", "2"].indexOf(level) === -1) {
        return false;
      }
      stage.setAttribute("data-zoom", level);
      toArray(canvas.querySelectorAll("button[data-zoom]")).forEach(function (button) {
        button.setAttribute("aria-pressed", String(button.getAttribute("data-zoom") === level));
      });
      return true;
    }

    function showGuides(on) {
      if (!canvas) {
        return;
      }
      canvas.classList.toggle("show-guides", !!on);
      toArray(canvas.querySelectorAll(".guides, .guides-legend")).forEach(function (el) {
        el.hidden = !on;
      });
      var toggle = document.getElementById("guides-toggle");
      if (toggle) {
        toggle.checked = !!on;
      }
    }

    function showPage(n) {
      n = Number(n);
      if (!(n >= 0 && n < pages.length) || Math.floor(n) !== n) {
        return false;
      }
      var changed = n !== current;
      current = n;
      pages.forEach(function (page, index) {
        if (page.figure) {
          page.figure.classList.toggle("current", index === n);
        }
      });
      toArray(document.querySelectorAll("[data-show-page]")).forEach(function (button) {
        if (Number(button.getAttribute("data-show-page")) === n) {
          button.setAttribute("aria-current", "true");
        } else {
          button.removeAttribute("aria-current");
        }
      });
      if (changed) {
        closeEditing(false);
        emit("pps:paged", { page: n });
      }
      return true;
    }

    // -- the loader ------------------------------------------------------------------

    var loader = null;

    function showLoader(text) {
      var host = stage || root;
      if (!loader) {
        loader = document.createElement("div");
        loader.className = "canvas-loader";
        loader.setAttribute("role", "status");
        host.appendChild(loader);
      }
      loader.textContent = text || message("loading");
      loader.hidden = false;
      host.setAttribute("aria-busy", "true");
    }

    function hideLoader() {
      if (loader) {
        loader.hidden = true;
        (stage || root).removeAttribute("aria-busy");
      }
    }

    // -- phone: one primary action, the rest in a menu -----------------------------------

    function setUpMenu() {
      var menu = document.querySelector(".more-actions");
      if (!menu || !window.matchMedia) {
        return;
      }
      var phone = window.matchMedia(PHONE);
      var apply = function () {
        menu.open = !phone.matches;
      };
      apply();
      if (phone.addEventListener) {
        phone.addEventListener("change", apply);
      }
    }

    // -- wiring ----------------------------------------------------------------------

    if (form) {
      form.setAttribute("data-seq", "0");
      form.addEventListener("input", function (event) {
        var field = event.target;
        var key = keyOf(field);
        if (key === null) {
          return;
        }
        seq += 1;
        form.setAttribute("data-seq", String(seq));
        if (editing && editing.field === field && editing.input.value !== field.value) {
          editing.input.value = field.value;
        }
        emit("pps:changed", { key: key, value: field.value });
        pages.forEach(function (page, index) {
          // Pages that show the field, and any whose image is broken (e.g. it could not
          // be drawn before): every page shows the latest values.
          // A radio of a choice group names its group's field id in data-field.
          var id = field.getAttribute("data-field") || field.id;
          if (page.broken || fieldsOf(page.img).indexOf(id) !== -1) {
            render(index);
          }
        });
      });
      form.addEventListener("focusin", function (event) {
        var field = event.target;
        if (keyOf(field) === null) {
          return;
        }
        highlight(field.id);
        changeScope(field);
        // Bring the page that shows this text into view.
        var spots = spotsFor(field.id);
        var onCurrent = spots.some(function (spot) {
          return spot.closest("figure") === (pages[current] && pages[current].figure);
        });
        if (spots.length && !onCurrent) {
          showPage(Number(spots[0].closest("figure").getAttribute("data-page")));
        }
      });
    }

    pages.forEach(function (page, index) {
      page.img.addEventListener("error", function () {
        if (page.img.getAttribute("data-blob") === page.img.getAttribute("src")) {
          return;
        }
        page.broken = true;
        render(index);
      });
      if (page.broken) {
        render(index);
      }
    });

    setUpHotspots();
    setUpCanvas();
    setUpMenu();

    // After a refused save the summary lists the problems: put the focus there.
    var summary = document.getElementById("error-summary");
    if (summary) {
      summary.setAttribute("tabindex", "-1");
      summary.focus();
    }

    // -- window.ppsEditor (EDITOR-API.md) ---------------------------------------------

    api.info = function () {
      return {
        hash: root.getAttribute("data-draft-hash"),
        template: root.getAttribute("data-template-name"),
        pages: pages.length,
        locked: locked,
        step: root.getAttribute("data-step"),
        // DataKeys only: a choice (radio group, colour) is a style of a DataKey, not one.
        dataKeys: valueFields()
          .filter(function (field) {
            return field.type !== "radio" && field.type !== "color";
          })
          .map(function (field) {
            return { name: keyOf(field), label: labelOf(field) };
          }),
      };
    };
    api.pageCount = function () {
      return pages.length;
    };
    api.currentPage = function () {
      return current;
    };
    api.showPage = showPage;
    api.pagePreviewUrl = function (n) {
      var page = pages[Number(n)];
      return page ? page.img.currentSrc || page.img.src : null;
    };
    api.refreshPage = function (n) {
      return render(Number(n));
    };
    api.update = function (key, value) {
      var field = fieldFor(key);
      if (!field || locked || field.disabled || field.tagName === undefined) {
        return false;
      }
      field.value = value === null || value === undefined ? "" : String(value);
      field.dispatchEvent(new Event("input", { bubbles: true }));
      return true;
    };
    api.zoom = zoom;
    api.showGuides = showGuides;
    api.showLoader = showLoader;
    api.hideLoader = hideLoader;

    var loaded = function () {
      var info = api.info();
      emit("pps:loaded", {
        hash: info.hash,
        template: info.template,
        pages: info.pages,
        dataKeys: info.dataKeys,
      });
    };
    // Deferred scripts after this one run before DOMContentLoaded: they hear pps:loaded.
    if (contentLoaded) {
      setTimeout(loaded, 0);
    } else {
      document.addEventListener("DOMContentLoaded", loaded);
    }
  }

  var contentLoaded = false;
  document.addEventListener("DOMContentLoaded", function () {
    contentLoaded = true;
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    contentLoaded = document.readyState === "complete";
    start();
  }
})();
