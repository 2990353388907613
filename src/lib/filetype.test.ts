import { describe, expect, it } from 'vitest';
import { decodeBase64Strict, sniffFileType, typeOfExtension } from './filetype.js';

const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

describe('sniffFileType', () => {
  it('recognises PNG, JPEG and PDF by their leading bytes', () => {
    expect(sniffFileType(png)).toBe('image/png');
    expect(sniffFileType(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]))).toBe('image/jpeg');
    expect(sniffFileType(Buffer.from('%PDF-1.7\n%...'))).toBe('application/pdf');
  });

  it('rejects everything else, whatever its name', () => {
    expect(sniffFileType(Buffer.from('MZ\x90\x00'))).toBeUndefined(); // Windows executable
    expect(sniffFileType(Buffer.from('GIF89a'))).toBeUndefined();
    expect(sniffFileType(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeUndefined();
    expect(sniffFileType(Buffer.from([0x89, 0x50, 0x4e]))).toBeUndefined(); // truncated PNG magic
    expect(sniffFileType(Buffer.from('%PDF'))).toBeUndefined();
    expect(sniffFileType(new Uint8Array())).toBeUndefined();
  });
});

describe('typeOfExtension', () => {
  it('maps the allowed extensions case-insensitively', () => {
    expect(typeOfExtension('a.PNG')).toBe('image/png');
    expect(typeOfExtension('passport_front.jpg')).toBe('image/jpeg');
    expect(typeOfExtension('x.JpEg')).toBe('image/jpeg');
    expect(typeOfExtension('cert.pdf')).toBe('application/pdf');
    expect(typeOfExtension('evil.pdf.exe')).toBeUndefined();
    expect(typeOfExtension('noext')).toBeUndefined();
  });
});

describe('decodeBase64Strict', () => {
  it('decodes valid base64 and data URIs', () => {
    expect(decodeBase64Strict(png.toString('base64'))?.equals(png)).toBe(true);
    expect(decodeBase64Strict(`data:image/png;base64,${png.toString('base64')}`)?.equals(png)).toBe(true);
    expect(decodeBase64Strict('aGk')?.toString()).toBe('hi');
  });

  it('refuses text that is not base64', () => {
    for (const bad of ['', 'not base64!', '****', 'a', 'aGk=x', 'aG=k', '=aGk']) expect(decodeBase64Strict(bad)).toBeUndefined();
  });
});

describe('sniffing random bytes', () => {
  it('never throws and only recognises the three magic prefixes', async () => {
    const fc = (await import('fast-check')).default;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const t = sniffFileType(bytes);
        return t === undefined || [0x89, 0xff, 0x25].includes(bytes[0]!);
      }),
    );
  });
});
