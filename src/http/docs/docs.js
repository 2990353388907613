/* global document, window, crypto, SwaggerUIBundle */
// The API reference page: Swagger UI over this server's own document. Operations start folded
// (the document is large: unfolding every one on load is what made the page slow), "Try it out"
// is on, and every POST gets a fresh Idempotency-Key when the field was left as the page filled
// it (a `docs-` key) for a request already sent, so pressing "Execute" twice creates two things,
// not a replay; a key typed by hand is sent as it is.
(function () {
  var sent = {};
  function freshKey() {
    return 'docs-' + (window.crypto && crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random().toString(16).slice(2));
  }
  window.ui = SwaggerUIBundle({
    url: document.body.dataset.spec,
    dom_id: '#swagger-ui',
    deepLinking: true,
    docExpansion: 'none',
    defaultModelsExpandDepth: -1,
    defaultModelExpandDepth: 2,
    tryItOutEnabled: true,
    displayRequestDuration: true,
    persistAuthorization: true,
    filter: true,
    syntaxHighlight: { activated: false },
    requestInterceptor: function (request) {
      if (String(request.method).toUpperCase() !== 'POST') return request;
      var headers = request.headers || (request.headers = {});
      var name = Object.keys(headers).find(function (h) {
        return h.toLowerCase() === 'idempotency-key';
      });
      if (!name) {
        headers['Idempotency-Key'] = freshKey();
      } else if (String(headers[name]).indexOf('docs-') === 0 && sent[headers[name]]) {
        headers[name] = freshKey();
      }
      sent[headers[name || 'Idempotency-Key']] = true;
      return request;
    },
    onComplete: function () {
      var loading = document.getElementById('docs-loading');
      if (loading) loading.remove();
      document.body.dataset.ready = 'true';
    },
  });
})();
