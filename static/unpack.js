/*
 * The export's later payloads (app/packing.py pack: gzip, then base64) turned back into text, with the
 * browser's own DecompressionStream: nothing fetched, nothing of ours inflating.  Both calls return a
 * Promise.  Plain ES2019; defines the global `Unpack` in a page, module.exports under Node.
 */
(function (root, factory) {
  if (typeof module === 'object' && module.exports) module.exports = factory();
  else root.Unpack = factory();
})(typeof self !== 'undefined' ? self : this, function () {
  'use strict';

  function bytes(packed) {
    const binary = atob(packed);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  }

  /** The text `packed` holds. */
  function text(packed) {
    const stream = new Blob([bytes(packed)]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text();
  }

  /** The JSON value `packed` holds. */
  function json(packed) {
    return text(packed).then(JSON.parse);
  }

  return { text, json };
});
