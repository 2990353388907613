-- Request log bodies stored while keys were matched by exact name only may hold a card PIN or
-- another secret under a key that list missed (card_pin, cardPin, new-password, signingSecret).
-- New rows are redacted by the words of each key (src/lib/redact.ts); this replaces, in stored
-- rows, the string or number value of every key holding one of those words: separated by _ . - or
-- a space (any case), or as a camelCase word. A look-alike key may lose its value too, which costs
-- an old row some detail, never a secret.
update api_request_log
set
  request_body = regexp_replace(
    regexp_replace(
      request_body,
      '("(?:[^"\\]*[_. -])?(?:pins?|cvv2?|cvc2?|pan|secrets?|passwords?|passwd|passphrase|tokens?|card[_. -]?number)(?:[_. -][^"\\]*)?"\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)',
      '\1"[redacted]"',
      'gi'
    ),
    '("(?:[^"\\]*[a-z0-9])?(?:Pins?|PINS?|Cvv2?|CVV2?|Cvc2?|CVC2?|Pan|PAN|Secrets?|SECRETS?|Passwords?|PASSWORDS?|Passwd|Passphrase|Tokens?|TOKENS?|CardNumber)(?:[^a-z"\\][^"\\]*)?"\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)',
    '\1"[redacted]"',
    'g'
  ),
  response_body = regexp_replace(
    regexp_replace(
      response_body,
      '("(?:[^"\\]*[_. -])?(?:pins?|cvv2?|cvc2?|pan|secrets?|passwords?|passwd|passphrase|tokens?|card[_. -]?number)(?:[_. -][^"\\]*)?"\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)',
      '\1"[redacted]"',
      'gi'
    ),
    '("(?:[^"\\]*[a-z0-9])?(?:Pins?|PINS?|Cvv2?|CVV2?|Cvc2?|CVC2?|Pan|PAN|Secrets?|SECRETS?|Passwords?|PASSWORDS?|Passwd|Passphrase|Tokens?|TOKENS?|CardNumber)(?:[^a-z"\\][^"\\]*)?"\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)',
    '\1"[redacted]"',
    'g'
  )
where request_body ~* '(pin|cvv|cvc|pan|secret|passw|passphrase|token|number)'
   or response_body ~* '(pin|cvv|cvc|pan|secret|passw|passphrase|token|number)';
