// Inside the pasted fragment's frame (app/fragment.py): tells the embedding window how tall the page is,
// now and after every change, in a message { [key]: height } (key: this script's data-key).
(function reportHeight() {
  if (window.parent === window) return; // opened on its own: nobody to tell
  const key = document.currentScript.dataset.key;
  let last = -1;
  // How far down the content reaches (the body itself may be as tall as the frame, whatever it holds).
  function contentHeight() {
    let bottom = 0;
    for (const child of document.body.children) {
      bottom = Math.max(bottom, child.getBoundingClientRect().bottom + window.scrollY);
    }
    return Math.ceil(bottom + parseFloat(getComputedStyle(document.body).marginBottom));
  }
  function send() {
    const height = contentHeight();
    if (height !== last) {
      last = height;
      window.parent.postMessage({ [key]: height }, '*');
    }
  }
  const watch = new ResizeObserver(send);
  for (const child of document.body.children) watch.observe(child);
  window.addEventListener('load', send);
})();
