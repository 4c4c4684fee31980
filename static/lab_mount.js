// The exported lab (app/export_lab.py): drawn by static/lab.js into its section from the JSON beside it,
// once the explorer above it is whole (static/explorer_page.js afterEmbed), not before it.
(function () {
  const mount = () => {
    window.TrainingLabPage = TrainingLab.fill(
      document.getElementById('training-lab'),
      JSON.parse(document.getElementById('training-lab-data').textContent),
    );
  };
  const head = window.HeadExplorerPage;
  if (head && head.afterEmbed) head.afterEmbed(mount);
  else mount();
})();
