// The navigation's menu button on phones (progressive: without this script the links are a
// row to scroll sideways). Loaded with <script src defer> from this origin, so it runs under
// the dashboard's CSP. At narrow widths the links fold behind "Menu: <this page>"; the
// button says whether they are shown (aria-expanded), and Escape folds them again.
(function () {
  "use strict";
  var header = document.querySelector("header.top");
  var button = header && header.querySelector("button.menu-toggle");
  var nav = document.getElementById("dashboard-nav");
  if (!button || !nav) { return; }
  header.classList.add("has-menu");
  button.hidden = false;
  function set(open) {
    header.classList.toggle("menu-open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }
  button.addEventListener("click", function () {
    set(button.getAttribute("aria-expanded") !== "true");
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && button.getAttribute("aria-expanded") === "true") {
      set(false);
      button.focus();
    }
  });
})();
