// The exported lab (app/export_lab.py): drawn by static/lab.js into its section from the runs beside it
// (packed: app/packing.py, static/unpack.js), once the explorer above it is whole
// (static/explorer_page.js afterEmbed), not before it.
(function () {
  const mount = () =>
    Unpack.json(document.getElementById('training-lab-data').textContent)
      .then((data) => {
        window.TrainingLabPage = TrainingLab.fill(document.getElementById('training-lab'), data);
      })
      .catch((err) => console.error(err));
  const head = window.HeadExplorerPage;
  if (head && head.afterEmbed) head.afterEmbed(mount);
  else mount();
})();
