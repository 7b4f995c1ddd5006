// Starts Swagger UI on /docs. A static file rather than an inline script, so that the
// page runs under a Content-Security-Policy without 'unsafe-inline'.
window.addEventListener("load", function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
    // No calls to the public validator service: everything stays on this origin.
    validatorUrl: null
  });
});
