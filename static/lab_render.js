// The served lab's Panel JSComponent (widgets/lab_view.py): its section, drawn by static/lab.js from the
// component's `lab` (the shipped runs as JSON). Run as the end of the component's module, after
// static/pyformat.js, static/attention.js and static/lab.js have set their globals.
export function render({ model }) {
  const section = document.createElement('section');
  section.className = 'training-lab';
  section.setAttribute('aria-label', 'Training lab');
  TrainingLab.fill(section, JSON.parse(model.lab));
  return section;
}
