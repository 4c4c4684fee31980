// In the page the fragment is pasted into (app/fragment.py): puts the exported page, the JSON string in
// the <script type="application/json"> beside this one, into the fragment's frame, then sets the frame's
// height to each height the page inside reports ({ [key]: height }, key: this script's data-key).
// Messages from any other window are ignored, so several fragments can share a page.
(function embedAttentionHead() {
  const script = document.currentScript;
  const host = script.parentElement;
  const frame = host.querySelector('iframe');
  const key = script.dataset.key;
  window.addEventListener('message', (event) => {
    if (event.source !== frame.contentWindow || !event.data) return;
    const height = event.data[key];
    if (typeof height === 'number' && height > 0) frame.style.height = height + 'px';
  });
  frame.srcdoc = JSON.parse(host.querySelector('script[type="application/json"]').textContent);
})();
