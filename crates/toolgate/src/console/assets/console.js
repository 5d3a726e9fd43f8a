// The console's own script: the CSRF token rides on every htmx request (the
// token is in a <meta> of the page; no inline script is allowed).
document.addEventListener("htmx:configRequest", function (event) {
  var meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) {
    event.detail.headers["X-CSRF-Token"] = meta.getAttribute("content");
  }
});

// The flow graph of the Conversations page, drawn by the vendored Mermaid.
document.addEventListener("DOMContentLoaded", function () {
  if (window.mermaid && document.querySelector("pre.mermaid")) {
    window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
    window.mermaid.run({ querySelector: "pre.mermaid" });
  }
});
