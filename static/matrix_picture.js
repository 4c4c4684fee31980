// A heatmap with too many cells for numbers is painted as one picture, a pixel a cell scaled up, instead of
// a rectangle per cell (widgets/matrix_plot.py; the cells stay, not painted, for the hover). This is the
// code of the CustomJS that runs when the cells' source changes, in every page (served, export, notebook),
// with its args in scope: source (the cells), picture (the picture's source), picture_r and cells_r (their
// renderers), numbers (the numbers' renderer). What it writes is not sent back to a server (`sync: false`):
// the server sends each number once, and a served page draws the picture from them itself.
pictureFromCells(source, picture, picture_r, cells_r, numbers);

function pictureFromCells(cells, pictureSource, pictureRenderer, cellsRenderer, numbersRenderer) {
  const quiet = { sync: false };
  // The picture is drawn where a page can make its image (static/bokeh_seam.js ndarray); else the cells
  // paint their colours, as for a small matrix.
  const show = (picture) => {
    if (pictureRenderer.visible !== picture) {
      pictureRenderer.setv({ visible: picture }, quiet);
      cellsRenderer.glyph.setv({ fill_alpha: picture ? 0 : 1 }, quiet);
    }
  };
  if (numbersRenderer.visible) { // numbers in the cells (the export's page switched them on)
    show(false);
    return;
  }
  const data = cells.data;
  const col = (k) => (data instanceof Map ? data.get(k) : data[k]);
  const value = col('value'), xs = col('x'), ys = col('y');
  const n = value.length;
  const rows = n ? ys[n - 1] + 1 : 1, cols = n ? xs[n - 1] + 1 : 1;
  const flat = new Float64Array(rows * cols).fill(NaN);
  for (let k = 0; k < n; k++) flat[ys[k] * cols + xs[k]] = value[k];
  const seam = window.BokehSeam;
  const image = seam ? seam.ndarray(flat, rows, cols) : null;
  if (image === null) {
    show(false);
    return;
  }
  pictureSource.setv({ data: { image: [image], x: [-0.5], y: [-0.5], dw: [cols], dh: [rows] } }, quiet);
  show(true);
}
