import { constants, createDecipheriv, generateKeyPairSync, privateDecrypt } from 'node:crypto';

/** Exactly what a client does with the answer (README, "Cards"). */
export function decryptEnvelope(privateKeyPem: string, env: { ciphertext: string; encrypted_key: string; nonce: string }) {
  const aesKey = privateDecrypt(
    { key: privateKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
    Buffer.from(env.encrypted_key, 'base64'),
  );
  const data = Buffer.from(env.ciphertext, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', aesKey, Buffer.from(env.nonce, 'base64'));
  decipher.setAuthTag(data.subarray(data.length - 16));
  const plain = Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]);
  return JSON.parse(plain.toString('utf8'));
}

export function rsaKeyPair(bits = 2048) {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: bits,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { header: Buffer.from(publicKey).toString('base64'), privateKey, publicKey };
}
