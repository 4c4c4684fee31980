// The exported lab (app/export_lab.py): drawn by static/lab.js into its section from the runs beside it
// (packed: app/packing.py, static/unpack.js), once the explorer above it is whole
// (static/explorer_page.js afterEmbed), not before it; then "Train it yourself" (static/train.js and
// static/lab_train.js, packed beside the runs) is unpacked, run and attached.
(function () {
  const text = (id) => document.getElementById(id).textContent;
  const mount = () =>
    Unpack.json(text('training-lab-data'))
      .then((data) => {
        window.TrainingLabPage = TrainingLab.fill(document.getElementById('training-lab'), data);
        return Unpack.text(text('training-lab-trainer')).then((code) => {
          const script = document.createElement('script');
          script.textContent = code;
          document.head.appendChild(script);
          LabTrainPanel.attach(window.TrainingLabPage, data);
        });
      })
      .catch((err) => console.error(err));
  const head = window.HeadExplorerPage;
  if (head && head.afterEmbed) head.afterEmbed(mount);
  else mount();
})();
