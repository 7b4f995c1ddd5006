// Starts Swagger UI on /docs. A static file rather than an inline script, so that the
// page runs under a Content-Security-Policy without 'unsafe-inline'.
window.addEventListener("load", function () {
  "use strict";
  var root = document.getElementById("swagger-ui");

  // Swagger UI draws some form controls without a name a screen reader could announce
  // (the server picker, media type pickers): name them after what they choose.
  function nameControls() {
    var controls = root.querySelectorAll(
      "select:not([aria-label]), input:not([aria-label]), textarea:not([aria-label])"
    );
    Array.prototype.forEach.call(controls, function (control) {
      var label = control.labels && control.labels[0];
      if (label && label.textContent.trim()) {
        return;
      }
      var name = control.closest(".servers")
        ? "Server"
        : control.getAttribute("placeholder") || control.getAttribute("title") ||
          { SELECT: "Media type", TEXTAREA: "Request body" }[control.tagName] || "Value";
      control.setAttribute("aria-label", name);
    });
    // Each operation's response table is a live region: give each its own name.
    Array.prototype.forEach.call(
      root.querySelectorAll("[role=region]:not([aria-label])"),
      function (region) {
        region.setAttribute("aria-label", "Responses " + region.id.replace(/_/g, " "));
      }
    );
    // Code samples scroll sideways: they must be reachable by keyboard to be scrolled.
    Array.prototype.forEach.call(root.querySelectorAll("pre:not([tabindex])"), function (pre) {
      pre.setAttribute("tabindex", "0");
    });
  }
  new MutationObserver(nameControls).observe(root, { childList: true, subtree: true });

  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    dom_id: "#swagger-ui",
    // No links inside the operations' summary buttons (a link in a button is unusable for
    // keyboard and screen reader users; axe: nested-interactive).
    deepLinking: false,
    presets: [SwaggerUIBundle.presets.apis],
    // Without the top bar: its unlabelled URL field and definition picker are of no use
    // for the one document this page shows.
    layout: "BaseLayout",
    // No calls to the public validator service: everything stays on this origin.
    validatorUrl: null
  });
});
