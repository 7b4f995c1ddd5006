// The editor's live preview. A static file (not an inline script) so the page runs under a
// Content-Security-Policy without 'unsafe-inline'. Everything works without it: the form
// posts normally and the preview images show the saved design.
(function () {
  "use strict";

  var DEBOUNCE_MS = 400;

  function start() {
    var root = document.getElementById("editor");
    var form = document.getElementById("editor-form");
    if (!root || !form || !window.fetch || !window.URLSearchParams) {
      return;
    }
    var images = Array.prototype.slice.call(document.querySelectorAll("img.page-image"));
    if (!images.length) {
      return;
    }
    var status = document.getElementById("preview-status");
    var pending = {}; // page index -> true while it needs a new image
    var inFlight = {}; // page index -> AbortController
    var timer = null;

    function say(text) {
      if (status) {
        status.textContent = text;
      }
    }

    function fieldsOf(img) {
      var list = img.getAttribute("data-fields") || "";
      return list ? list.split(" ") : [];
    }

    function showErrors(byField) {
      var inputs = form.querySelectorAll("input[name^='v:'], textarea[name^='v:']");
      Array.prototype.forEach.call(inputs, function (input) {
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

    function render(index) {
      var img = images[index];
      if (inFlight[index]) {
        inFlight[index].abort();
      }
      var controller = window.AbortController ? new AbortController() : null;
      inFlight[index] = controller;
      var body = new URLSearchParams(new FormData(form));
      img.closest("figure").setAttribute("aria-busy", "true");
      say(root.getAttribute("data-msg-updating"));
      fetch(img.getAttribute("data-render-url"), {
        method: "POST",
        body: body,
        credentials: "same-origin",
        headers: { Accept: "image/png, application/json" },
        signal: controller ? controller.signal : undefined,
      })
        .then(function (response) {
          if (response.status === 200) {
            return response.blob().then(function (blob) {
              var previous = img.getAttribute("data-blob");
              var url = URL.createObjectURL(blob);
              img.setAttribute("data-blob", url);
              img.src = url;
              if (previous) {
                URL.revokeObjectURL(previous);
              }
              showErrors({});
              say(root.getAttribute("data-msg-updated"));
            });
          }
          if (response.status === 422) {
            return response.json().then(function (problem) {
              showErrors(problem.fields || {});
              var general = (problem.general || []).join(" ");
              say(root.getAttribute("data-msg-errors") + (general ? " " + general : ""));
            });
          }
          if (response.status === 429 || response.status === 503) {
            var wait = parseInt(response.headers.get("Retry-After") || "1", 10) || 1;
            say(root.getAttribute("data-msg-busy"));
            pending[index] = true;
            schedule(wait * 1000);
            return null;
          }
          say(
            root
              .getAttribute("data-msg-failed")
              .replace("{reason}", response.status + " " + response.statusText)
          );
          return null;
        })
        .catch(function (error) {
          if (error && error.name === "AbortError") {
            return;
          }
          say(root.getAttribute("data-msg-failed").replace("{reason}", String(error)));
        })
        .then(function () {
          if (inFlight[index] === controller) {
            delete inFlight[index];
            img.closest("figure").removeAttribute("aria-busy");
          }
        });
    }

    function flush() {
      timer = null;
      Object.keys(pending).forEach(function (key) {
        delete pending[key];
        render(Number(key));
      });
    }

    function schedule(delay) {
      if (timer !== null) {
        clearTimeout(timer);
      }
      timer = setTimeout(flush, delay);
    }

    form.addEventListener("input", function (event) {
      var id = event.target && event.target.id;
      if (!id) {
        return;
      }
      images.forEach(function (img, index) {
        if (fieldsOf(img).indexOf(id) !== -1) {
          pending[index] = true;
        }
      });
      schedule(DEBOUNCE_MS);
    });

    // After a refused save the summary lists the problems: put the focus there.
    var summary = document.getElementById("error-summary");
    if (summary) {
      summary.setAttribute("tabindex", "-1");
      summary.focus();
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
