// The served lab's Panel JSComponent (widgets/lab_view.py): its section, drawn by static/lab.js from the
// component's `lab` (the shipped runs as JSON), with "Train it yourself" (static/lab_train.js; the
// trainer runs in the student's browser, in a Web Worker). Run as the end of the component's module,
// after the files widgets/lab_view.py MODULE names have set their globals.
export function render({ model }) {
  const section = document.createElement('section');
  section.className = 'training-lab';
  section.setAttribute('aria-label', 'Training lab');
  const lab = JSON.parse(model.lab);
  LabTrainPanel.attach(TrainingLab.fill(section, lab), lab);
  return section;
}
