// The copy buttons of secrets shown once (progressive: without this script the secret is a
// read-only field to select and copy by hand). Loaded with <script src defer> from this
// origin, so it runs under the dashboard's CSP (no inline script).
(function () {
  "use strict";
  function select(field) {
    field.focus();
    field.select();
  }
  document.querySelectorAll("input[data-select]").forEach(function (field) {
    select(field);
    field.addEventListener("focus", function () { field.select(); });
  });
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    if (!field) { return; }
    var label = button.textContent;
    button.hidden = false;
    button.addEventListener("click", function () {
      var done = function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = label; }, 2000);
      };
      select(field);
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(done, function () {
          if (document.execCommand("copy")) { done(); }
        });
      } else if (document.execCommand("copy")) {
        done();
      }
    });
  });
})();
