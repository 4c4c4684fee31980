// Makes the exported page (app/export.py embed_scripts puts this script right after the page's roots and
// the JSON that describes them, its configuration last): static/explorer_page.js embed makes and binds it,
// as soon as this is parsed.
(function () {
  const config = document.currentScript.previousElementSibling;
  window.HeadExplorerPage.embed(config).catch((err) => console.error('export_embed.js:', err));
})();
