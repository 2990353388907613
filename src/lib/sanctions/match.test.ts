import { describe, expect, it } from 'vitest';
import { jaro, jaroWinkler, MATCH_THRESHOLD, nameKey, nameSimilarity, normalizeName, tokenSubsetSimilarity } from './match.js';
import { parseCsv, parseSdnCsv, sanctionsList, SanctionsList } from './list.js';

describe('Jaro-Winkler', () => {
  it('gives the textbook values', () => {
    expect(jaro('martha', 'marhta')).toBeCloseTo(0.944, 3);
    expect(jaroWinkler('martha', 'marhta')).toBeCloseTo(0.961, 3);
    expect(jaroWinkler('dixon', 'dicksonx')).toBeCloseTo(0.813, 3);
    expect(jaroWinkler('abc', 'abc')).toBe(1);
    expect(jaroWinkler('', 'abc')).toBe(0);
    expect(jaroWinkler('abc', 'xyz')).toBe(0);
  });
});

describe('name normalisation', () => {
  it('removes diacritics, case and punctuation and sorts tokens', () => {
    expect(normalizeName('  José  Ñúñez-García ')).toEqual(['jose', 'nunez', 'garcia']);
    expect(nameKey('DOE, John')).toBe(nameKey('john doe'));
    expect(nameKey('!!!')).toBe('');
  });
});

describe('nameSimilarity at the documented threshold', () => {
  const listed = nameKey('BLACKTHORNE, Mordecai Aurelius');
  it('matches the same name in any order, case or accent', () => {
    expect(nameSimilarity('Mordecai Aurelius Blackthorne', listed)).toBe(1);
    expect(nameSimilarity('mordécai aurelius BLACKTHORNE', listed)).toBe(1);
  });
  it('matches one typo and a missing middle name', () => {
    expect(nameSimilarity('Mordecai Aurelius Blackthorn', listed)).toBeGreaterThanOrEqual(MATCH_THRESHOLD);
    expect(nameSimilarity('Mordecai Blackthorne', nameKey('BLACKTHORNE, Mordecai'))).toBe(1);
    expect(nameSimilarity('Mordecai X Blackthorne', nameKey('Mordecai Blackthorne'))).toBe(1);
    expect(nameSimilarity('Muhammad Abdullah', nameKey('Mohammed Abdullah'))).toBeGreaterThanOrEqual(MATCH_THRESHOLD);
  });
  it('does not match different people', () => {
    expect(nameSimilarity('John Doe', listed)).toBeLessThan(MATCH_THRESHOLD);
    expect(nameSimilarity('Jane Doe', nameKey('John Doe'))).toBeLessThan(MATCH_THRESHOLD);
    expect(nameSimilarity('Mary Blackwood', listed)).toBeLessThan(MATCH_THRESHOLD);
  });
});

describe('OFAC SDN CSV list', () => {
  it('parses quoted fields, -0- blanks and skips vessels', () => {
    expect(parseCsv('1,"a, b","c ""q"""\r\n2,x,y\n')).toEqual([
      ['1', 'a, b', 'c "q"'],
      ['2', 'x', 'y'],
    ]);
    const entries = parseSdnCsv(
      '1,"DOE, Evil","individual","SDGT","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- "\n' +
        '2,"SEA","vessel","X","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- "\n' +
        '1,5,"aka","DOH, Evill","-0- "\n',
    );
    expect(entries.map((e) => [e.id, e.name, e.program])).toEqual([
      ['1', 'DOE, Evil', 'SDGT'],
      ['1', 'DOH, Evill', 'SDGT'],
    ]);
  });

  it('screens names against the shipped sample, aliases included', () => {
    const list = sanctionsList(undefined);
    expect(list.screen('Anatolii Zolotaryov')[0]?.list_id).toBe('9000002');
    expect(list.screen('Mordechai Blackthorn')[0]?.list_id).toBe('9000001');
    expect(list.screen('Northwind Shadow Trading Ltd')[0]?.list_id).toBe('9000004');
    expect(list.screen('Grey Marlin')).toEqual([]);
    expect(list.screen('John Michael Doe')).toEqual([]);
    expect(new SanctionsList([], 0.9).screen('x')).toEqual([]);
  });

  it('fails loudly when the configured file cannot be read', () => {
    expect(() => sanctionsList('/nonexistent/sdn.csv')).toThrow();
  });
});

describe('token subset', () => {
  it('matches when the list carries a middle name the customer omits, and the reverse', () => {
    const listed = nameKey('KOVALENKO, Dmytro Ivanovych');
    expect(nameSimilarity('Dmytro Kovalenko', listed)).toBeGreaterThanOrEqual(MATCH_THRESHOLD);
    expect(nameSimilarity('Dmitro Kovalenko', listed)).toBeGreaterThanOrEqual(MATCH_THRESHOLD);
    expect(nameSimilarity('Olena Kovalenko', listed)).toBeLessThan(MATCH_THRESHOLD);
    expect(nameSimilarity('Dmytro Shevchenko', listed)).toBeLessThan(MATCH_THRESHOLD);
    expect(tokenSubsetSimilarity(['kovalenko'], ['dmytro', 'kovalenko'])).toBe(0);
  });
});

describe('properties', () => {
  it('scores stay in [0, 1], never throw, and ignore token order and case', async () => {
    const fc = (await import('fast-check')).default;
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        const s = nameSimilarity(a, nameKey(b));
        return s >= 0 && s <= 1;
      }),
    );
    const word = fc.stringMatching(/^[a-z]{2,10}$/);
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 4 }), (tokens) => {
        const listed = nameKey(tokens.join(' '));
        return nameSimilarity([...tokens].reverse().join(' ').toUpperCase(), listed) === 1;
      }),
    );
  });
});
