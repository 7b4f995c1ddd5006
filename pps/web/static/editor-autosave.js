// Never lose work: autosave while typing, undo and redo across the session (kept in
// sessionStorage, so a reload of the tab keeps them), a warning before leaving with unsaved
// changes, and a conflict message instead of overwriting a change made elsewhere.
//
// A static file (the page's CSP forbids inline scripts). Without it the form still saves
// with its Save button, and a stale form gets a conflict page from the server.
// Contract (EDITOR-API.md): listens to `input` on form#editor-form and to `pps:changed`;
// dispatches `pps:saved` ({version}) and, for undo/redo, `input` and `pps:changed`; adds
// save(), undo() and redo() to window.ppsEditor.
(function () {
  "use strict";

  var SAVE_DELAY_MS = 1000; // after the last change
  var HISTORY_DELAY_MS = 500; // typing without such a pause is one undo step
  var HISTORY_LIMIT = 100;
  var RETRY_MAX_MS = 30000;
  var CONTROLS = { csrf_token: true, action: true, base_version: true };
  var NOT_VALUES = ["button", "submit", "reset", "file", "image"];

  function start() {
    var box = document.getElementById("autosave");
    var form = document.getElementById("editor-form");
    if (!box || !form || !window.fetch || !window.JSON) {
      return;
    }
    var status = document.getElementById("autosave-status");
    var undoButton = document.getElementById("undo-button");
    var redoButton = document.getElementById("redo-button");
    var conflictBox = document.getElementById("autosave-conflict");
    var conflictText = document.getElementById("autosave-conflict-text");
    var baseField = form.querySelector("input[name='base_version']");
    var csrfField = form.querySelector("input[name='csrf_token']");
    var url = box.getAttribute("data-url");
    var storageKey = "pps:history:" + box.getAttribute("data-hash");
    // The attribute, not the hidden field: browsers may restore a field's older value.
    var version = parseInt(box.getAttribute("data-version"), 10);
    var editor = (window.ppsEditor = window.ppsEditor || {});

    var saveTimer = null;
    var historyTimer = null;
    var inFlight = null; // the pending request's promise
    var conflict = null; // {current} while the server refused a stale save
    var failures = 0;
    var applying = false; // undo/redo is setting values: not a change of the customer's
    var leaving = false; // the form is being submitted or the customer chose to reload
    var shownState = null;

    // -- the form's values --------------------------------------------------------------

    function isValueField(el) {
      if (!el || !el.name || CONTROLS[el.name] || el.disabled || !el.form || el.form !== form) {
        return false;
      }
      if (el.tagName === "TEXTAREA" || el.tagName === "SELECT") {
        return true;
      }
      if (el.tagName !== "INPUT") {
        return false;
      }
      var type = (el.type || "text").toLowerCase();
      if (type === "hidden") {
        return el.name.indexOf("v:") === 0;
      }
      return NOT_VALUES.indexOf(type) === -1;
    }

    function valueFields() {
      return Array.prototype.filter.call(form.elements, isValueField);
    }

    function read(el, initial) {
      if (el.type === "checkbox" || el.type === "radio") {
        var on = initial ? el.defaultChecked : el.checked;
        return on ? el.value : "";
      }
      if (el.tagName === "SELECT") {
        var options = Array.prototype.filter.call(el.options, function (option) {
          return initial ? option.defaultSelected : option.selected;
        });
        return options.length ? options[0].value : el.options.length ? el.options[0].value : "";
      }
      return initial ? el.defaultValue : el.value;
    }

    // name -> value of every field; `initial`: as the server rendered the page.
    function snapshot(initial) {
      var snap = {};
      valueFields().forEach(function (el) {
        var value = read(el, initial);
        if (el.type === "radio") {
          if (value !== "" || !(el.name in snap)) {
            snap[el.name] = value;
          }
          return;
        }
        snap[el.name] = value;
      });
      return snap;
    }

    function same(a, b) {
      if (!a || !b) {
        return false;
      }
      var keys = Object.keys(a);
      if (keys.length !== Object.keys(b).length) {
        return false;
      }
      return keys.every(function (key) {
        return b.hasOwnProperty(key) && a[key] === b[key];
      });
    }

    function fieldsNamed(name) {
      return Array.prototype.filter.call(form.elements, function (el) {
        return el.name === name && isValueField(el);
      });
    }

    // The DataKey of a field: `data-key`, else its name without the form's `v:` prefix.
    function keyOf(name) {
      var el = fieldsNamed(name)[0];
      var key = el && el.getAttribute("data-key");
      if (key) {
        return key;
      }
      return name.indexOf("v:") === 0 ? name.slice(2) : name;
    }

    function dataValues(snap) {
      var values = {};
      Object.keys(snap).forEach(function (name) {
        values[keyOf(name)] = snap[name];
      });
      return values;
    }

    // -- the state shown ----------------------------------------------------------------

    var savedSnap = snapshot(true);
    if (document.getElementById("save-conflict") || document.getElementById("error-summary")) {
      savedSnap = null; // the form shows values the server did not store
    }

    function dirty() {
      return !same(snapshot(false), savedSnap);
    }

    function setState(state, reason) {
      var text = box.getAttribute("data-msg-" + state) || "";
      if (state === "failed") {
        text = text.replace("{reason}", reason || "");
      }
      if (shownState === state + text) {
        return; // unchanged: nothing new for screen readers to announce
      }
      shownState = state + text;
      status.setAttribute("data-state", state);
      status.textContent = text;
    }

    function showConflict(body) {
      conflict = { current: body.currentVersion };
      conflictText.textContent = body.message || box.getAttribute("data-msg-conflict-text");
      conflictBox.hidden = false;
      setState("conflict");
    }

    function setVersion(value) {
      version = value;
      box.setAttribute("data-version", String(value));
      if (baseField) {
        baseField.value = String(value);
      }
    }

    // The page header's "Status: ..." follows the saves.
    function showDraftState(state) {
      var shown = document.getElementById("draft-state");
      var label = box.getAttribute("data-msg-state-" + state);
      if (shown && label && shown.getAttribute("data-state") !== state) {
        shown.setAttribute("data-state", state);
        shown.textContent = label;
      }
    }

    function dispatch(name, detail) {
      document.dispatchEvent(new CustomEvent(name, { detail: detail }));
    }

    // -- saving ---------------------------------------------------------------------------

    function schedule(delay) {
      if (saveTimer !== null) {
        clearTimeout(saveTimer);
      }
      saveTimer = setTimeout(function () {
        saveTimer = null;
        save().catch(function () {});
      }, delay);
    }

    function retryLater(seconds) {
      failures += 1;
      var delay = seconds
        ? seconds * 1000
        : Math.min(RETRY_MAX_MS, 1000 * Math.pow(2, failures));
      schedule(delay);
    }

    function send(snap) {
      var body = JSON.stringify({ baseVersion: version, values: dataValues(snap) });
      return fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: {
          "Content-Type": "application/json",
          Accept: "application/json",
          "X-CSRF-Token": csrfField ? csrfField.value : "",
        },
        body: body,
      }).then(function (response) {
        return response
          .json()
          .catch(function () {
            return {};
          })
          .then(function (answer) {
            return { status: response.status, body: answer, response: response };
          });
      });
    }

    // Save the form now (when it differs from what is stored); resolves {version}.
    function save() {
      if (saveTimer !== null) {
        clearTimeout(saveTimer);
        saveTimer = null;
      }
      if (conflict) {
        return Promise.reject(refused(409, conflictText.textContent, 0));
      }
      if (inFlight) {
        return inFlight.then(save, save);
      }
      var snap = snapshot(false);
      if (same(snap, savedSnap)) {
        setState("saved");
        return Promise.resolve({ version: version, unchanged: true });
      }
      setState("saving");
      inFlight = send(snap).then(
        function (answer) {
          inFlight = null;
          return handle(answer, snap);
        },
        function (error) {
          inFlight = null;
          setState("failed", String(error && error.message ? error.message : error));
          retryLater(0);
          throw error;
        }
      );
      return inFlight;
    }

    function handle(answer, snap) {
      var body = answer.body || {};
      if (answer.status === 200 && typeof body.version === "number") {
        failures = 0;
        setVersion(body.version);
        savedSnap = snap;
        if (dirty()) {
          setState("unsaved");
          schedule(SAVE_DELAY_MS);
        } else {
          setState("saved");
        }
        showDraftState(body.state);
        dispatch("pps:saved", { version: body.version });
        return { version: body.version };
      }
      if (answer.status === 409 && body.conflict) {
        showConflict(body);
        throw refused(409, conflictText.textContent, 0);
      }
      var reason = body.message || answer.status + " " + answer.response.statusText;
      var retryAfter = parseInt(answer.response.headers.get("Retry-After") || "0", 10) || 0;
      setState("failed", reason);
      if (answer.status === 429 || answer.status >= 500) {
        retryLater(retryAfter);
      }
      // 4xx: the next change tries again (a 422 names the fields through the live preview).
      throw refused(answer.status, reason, retryAfter, body.fieldsByKey);
    }

    // A save pps refused, as the embed bridge reports it to the shop (docs/embedding.md):
    // the code of the bridge's own form posts, pps's message, its Retry-After, and on a 422
    // pps's messages per DataKey (fieldsByKey).
    function refused(status, message, retryAfter, fieldsByKey) {
      var error = new Error(message);
      error.code = status === 422 ? "invalid" : "http-" + status;
      error.retryAfter = retryAfter > 0 ? retryAfter : null;
      error.fields =
        status === 422 && fieldsByKey && typeof fieldsByKey === "object" && !Array.isArray(fieldsByKey)
          ? fieldsByKey
          : null;
      return error;
    }

    function changed() {
      if (conflict) {
        return;
      }
      setState(dirty() ? "unsaved" : "saved");
      schedule(SAVE_DELAY_MS);
    }

    // -- undo and redo ----------------------------------------------------------------------

    function loadHistory() {
      try {
        var stored = JSON.parse(window.sessionStorage.getItem(storageKey) || "null");
        if (
          stored &&
          Array.isArray(stored.entries) &&
          typeof stored.index === "number" &&
          stored.index >= 0 &&
          stored.index < stored.entries.length
        ) {
          return stored;
        }
      } catch (error) {
        // storage disabled or a broken entry: start afresh
      }
      return { entries: [], index: -1 };
    }

    var undoHistory = loadHistory();

    function persist() {
      try {
        window.sessionStorage.setItem(storageKey, JSON.stringify(undoHistory));
      } catch (error) {
        // storage full or disabled: history lasts as long as the page
      }
    }

    function updateButtons() {
      undoButton.disabled = !(undoHistory.index > 0 || historyTimer !== null);
      redoButton.disabled = !(undoHistory.index < undoHistory.entries.length - 1);
    }

    function commit() {
      if (historyTimer !== null) {
        clearTimeout(historyTimer);
        historyTimer = null;
      }
      var snap = snapshot(false);
      if (undoHistory.index < 0 || !same(undoHistory.entries[undoHistory.index], snap)) {
        undoHistory.entries = undoHistory.entries.slice(0, undoHistory.index + 1);
        undoHistory.entries.push(snap);
        if (undoHistory.entries.length > HISTORY_LIMIT) {
          undoHistory.entries.shift();
        }
        undoHistory.index = undoHistory.entries.length - 1;
        persist();
      }
      updateButtons();
    }

    function scheduleCommit() {
      if (historyTimer !== null) {
        clearTimeout(historyTimer);
      }
      historyTimer = setTimeout(commit, HISTORY_DELAY_MS);
      updateButtons();
    }

    function apply(snap) {
      applying = true;
      try {
        Object.keys(snap).forEach(function (name) {
          var value = snap[name];
          var changedHere = false;
          fieldsNamed(name).forEach(function (el) {
            if (el.type === "checkbox" || el.type === "radio") {
              var on = el.type === "radio" ? el.value === value : value !== "";
              if (el.checked !== on) {
                el.checked = on;
                changedHere = true;
              }
            } else if (el.value !== value) {
              el.value = value;
              changedHere = true;
            }
            if (changedHere) {
              el.dispatchEvent(new Event("input", { bubbles: true }));
            }
          });
          if (changedHere) {
            dispatch("pps:changed", { key: keyOf(name), value: value });
          }
        });
      } finally {
        applying = false;
      }
      changed();
    }

    function undo() {
      if (historyTimer !== null) {
        commit();
      }
      if (undoHistory.index <= 0) {
        return;
      }
      undoHistory.index -= 1;
      persist();
      apply(undoHistory.entries[undoHistory.index]);
      updateButtons();
    }

    function redo() {
      if (historyTimer !== null) {
        commit();
      }
      if (undoHistory.index >= undoHistory.entries.length - 1) {
        return;
      }
      undoHistory.index += 1;
      persist();
      apply(undoHistory.entries[undoHistory.index]);
      updateButtons();
    }

    // -- wiring -----------------------------------------------------------------------------

    function onChange(event) {
      if (applying || (event.type === "input" && !isValueField(event.target))) {
        return;
      }
      scheduleCommit();
      changed();
    }

    form.addEventListener("input", onChange);
    document.addEventListener("pps:changed", onChange);
    form.addEventListener("focusout", function (event) {
      if (isValueField(event.target)) {
        commit();
        if (dirty() && !conflict) {
          schedule(0);
        }
      }
    });
    undoButton.addEventListener("click", undo);
    redoButton.addEventListener("click", redo);
    document.addEventListener("keydown", function (event) {
      if (!(event.ctrlKey || event.metaKey) || event.altKey) {
        return;
      }
      var key = (event.key || "").toLowerCase();
      if (key === "z" && !event.shiftKey) {
        event.preventDefault();
        undo();
      } else if ((key === "z" && event.shiftKey) || key === "y") {
        event.preventDefault();
        redo();
      }
    });

    document.getElementById("conflict-reload").addEventListener("click", function () {
      commit(); // keeps "mine" in the history: undo after the reload brings it back
      leaving = true;
      window.location.reload();
    });
    document.getElementById("conflict-keep").addEventListener("click", function () {
      if (!conflict) {
        return;
      }
      setVersion(conflict.current); // an explicit overwrite of that version
      conflict = null;
      conflictBox.hidden = true;
      save().catch(function () {});
    });

    form.addEventListener("submit", function (event) {
      if (saveTimer !== null) {
        clearTimeout(saveTimer);
        saveTimer = null;
      }
      if (inFlight) {
        // An autosave is changing the version the form names: submit once it is done.
        event.preventDefault();
        var submitter = event.submitter || null;
        var again = function () {
          form.requestSubmit(submitter);
        };
        inFlight.then(again, again);
        return;
      }
      leaving = true;
    });

    // Links to another step save first, so the next page shows what was typed.
    document.addEventListener("click", function (event) {
      var link = event.target && event.target.closest ? event.target.closest("a[href]") : null;
      if (
        !link ||
        link.hasAttribute("data-exit") ||
        link.target ||
        event.defaultPrevented ||
        event.button !== 0 ||
        event.ctrlKey ||
        event.metaKey ||
        event.shiftKey ||
        link.origin !== window.location.origin ||
        conflict ||
        !(dirty() || inFlight)
      ) {
        return;
      }
      event.preventDefault();
      save().then(function () {
        leaving = true;
        window.location.href = link.href;
      }, function () {});
    });

    window.addEventListener("beforeunload", function (event) {
      if (leaving || !(dirty() || inFlight || conflict)) {
        return undefined;
      }
      var message = box.getAttribute("data-msg-leave");
      event.preventDefault();
      event.returnValue = message;
      return message;
    });

    editor.save = function () {
      commit();
      return save().then(function (result) {
        if (result.unchanged) {
          dispatch("pps:saved", { version: result.version }); // nothing new: saved already
        }
        return { version: result.version };
      });
    };
    editor.undo = undo;
    editor.redo = redo;

    setVersion(version);
    commit();
    box.hidden = false;
    if (savedSnap === null) {
      setState("unsaved");
    } else if (dirty()) {
      changed(); // the browser restored values the server does not have
    } else {
      setState("saved");
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
