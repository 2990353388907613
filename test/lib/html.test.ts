import { describe, expect, it } from 'vitest';
import { escapeHtml } from '../../src/lib/html.js';

// The dashboard, the hosted KYC page and the hosted checkout page all escape through this one function.
describe('escapeHtml', () => {
  it('escapes every character that could end a text node or a quoted attribute', () => {
    expect(escapeHtml(`<a href="x" title='y'>&\`</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&#96;&lt;/a&gt;');
  });

  it('leaves other text as it is', () => {
    expect(escapeHtml('Pay NGN 1,000.00 — café')).toBe('Pay NGN 1,000.00 — café');
  });
});
