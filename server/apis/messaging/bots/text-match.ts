// Text normalisation and similarity for the chatbot and keyword bots. No external AI: a
// question is compared with every trained phrasing by TF-IDF cosine similarity, computed twice
// and combined (WORD_WEIGHT words, the rest character trigrams): once over words (stop words
// dropped; a word the bot never saw is first corrected to its closest known word within one
// edit, two for words of 5+ letters, so "wen" counts as "when"), once over character trigrams
// of the words (partial credit for "opning" against "opening"). IDF comes from the bot's own
// phrasings: words every question shares weigh little, distinctive ones ("insurance") much.

import { foldedText } from '#server/lib/keywords.js';

const STOP_WORDS = new Set(
  (
    'a an the and or but if of to in on at by for with from about as into is are was were be been being am do does did ' +
    'i me my we our you your he she it its they them their this that these those there here what which who whom ' +
    'can could would should will shall may might must have has had please hi hello hey thanks thank ok ' +
    // a few common Spanish, Portuguese, German and French function words
    'el la los las de del y o en un una que es por para con se lo al ' +
    'o os as um uma e do da dos das em no na com ' +
    'der die das und ist ein eine zu mit von den dem im ' +
    'le les des et est une du au aux en pour avec'
  ).split(' '),
);

/**
 * The shared keyword folding (lib/keywords.ts: NFKC, format characters dropped, spaces, accents
 * and case folded), in lower case, punctuation dropped, whitespace collapsed.
 */
export function normalise(text: string): string {
  return foldedText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** The words of a text, normalised. */
export const words = (text: string): string[] => normalise(text).split(' ').filter(Boolean);

/** The content words: stop words dropped (all words when nothing else is left, e.g. "who are you"). */
export function contentWords(text: string): string[] {
  const all = words(text);
  const kept = all.filter((w) => !STOP_WORDS.has(w));
  return kept.length ? kept : all;
}

/** The key under which a question is known: its content words, in order. */
export const questionKey = (text: string): string => contentWords(text).join(' ');

function trigrams(tokens: string[]): string[] {
  const out: string[] = [];
  for (const t of tokens) {
    const padded = ` ${t} `;
    for (let i = 0; i + 3 <= padded.length; i++) out.push(padded.slice(i, i + 3));
  }
  return out;
}

type Vector = Map<string, number>;

function counts(terms: string[]): Vector {
  const v: Vector = new Map();
  for (const t of terms) v.set(t, (v.get(t) ?? 0) + 1);
  return v;
}

function weigh(tf: Vector, idf: (term: string) => number): Vector {
  const out: Vector = new Map();
  let norm = 0;
  for (const [t, n] of tf) {
    const w = n * idf(t);
    out.set(t, w);
    norm += w * w;
  }
  norm = Math.sqrt(norm);
  if (norm > 0) for (const [t, w] of out) out.set(t, w / norm);
  return out;
}

function dot(a: Vector, b: Vector): number {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let sum = 0;
  for (const [t, w] of small) sum += w * (large.get(t) ?? 0);
  return sum;
}

interface Space {
  df: Map<string, number>;
  docs: number;
}

const idfOf = (space: Space) => (term: string) => Math.log((space.docs + 1) / ((space.df.get(term) ?? 0) + 1)) + 1;

function space(docs: Vector[]): Space {
  const df = new Map<string, number>();
  for (const d of docs) for (const t of d.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  return { df, docs: docs.length };
}

/** How much the word similarity counts against the trigram similarity. */
export const WORD_WEIGHT = 0.7;

/** Optimal string alignment distance, giving up (Infinity) beyond `max`. */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return Infinity;
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
      best = Math.min(best, d);
    }
    if (best > max) return Infinity;
    rows.push(row);
  }
  return rows[a.length]![b.length]! <= max ? rows[a.length]![b.length]! : Infinity;
}

export interface Phrasing<T> {
  text: string;
  item: T;
}

export interface Match<T> {
  item: T;
  score: number;
  phrasing: string;
}

/** An index over phrasings (each pointing at its item); `best` answers the closest one. */
export class SimilarityIndex<T> {
  private readonly wordSpace: Space;
  private readonly gramSpace: Space;
  private readonly vectors: { word: Vector; gram: Vector; phrasing: Phrasing<T> }[];

  constructor(phrasings: Phrasing<T>[]) {
    const tokens = phrasings.map((p) => contentWords(p.text));
    const wordTf = tokens.map((t) => counts(t));
    const gramTf = tokens.map((t) => counts(trigrams(t)));
    this.wordSpace = space(wordTf);
    this.gramSpace = space(gramTf);
    this.vectors = phrasings.map((phrasing, i) => ({
      word: weigh(wordTf[i]!, idfOf(this.wordSpace)),
      gram: weigh(gramTf[i]!, idfOf(this.gramSpace)),
      phrasing,
    }));
  }

  /** The closest phrasing's item and its score in [0, 1]; undefined for an empty index or text. */
  best(text: string): Match<T> | undefined {
    const tokens = contentWords(text);
    if (!tokens.length || !this.vectors.length) return undefined;
    const word = weigh(counts(tokens.map((t) => this.corrected(t))), idfOf(this.wordSpace));
    const gram = weigh(counts(trigrams(tokens)), idfOf(this.gramSpace));
    let best: Match<T> | undefined;
    for (const v of this.vectors) {
      const score = WORD_WEIGHT * dot(word, v.word) + (1 - WORD_WEIGHT) * dot(gram, v.gram);
      if (!best || score > best.score) best = { item: v.phrasing.item, score, phrasing: v.phrasing.text };
    }
    // Rounded, so an identical phrasing scores exactly 1 and meets a threshold of 1.
    return best && { ...best, score: Math.min(1, Math.max(0, Math.round(best.score * 1e6) / 1e6)) };
  }

  /** A known word as is; an unknown one as the closest known word within reach, else as is. */
  private corrected(token: string): string {
    if (this.wordSpace.df.has(token) || token.length < 3 || /\d/.test(token)) return token;
    const max = token.length >= 5 ? 2 : 1;
    let best = token;
    let distance = Infinity;
    for (const known of this.wordSpace.df.keys()) {
      const d = editDistance(token, known, Math.min(max, distance - 1));
      if (d < distance) [best, distance] = [known, d];
    }
    return best;
  }
}

/**
 * Keyword matching without regular expressions (so no pattern can be slow): `exact` compares
 * the whole message, `contains` looks for the keyword's words as a contiguous run of the
 * message's words, `starts_with` for them at its start. Case and accents are ignored.
 */
export function keywordMatches(message: string, keyword: string, mode: 'exact' | 'contains' | 'starts_with'): boolean {
  const m = words(message);
  const k = words(keyword);
  if (!k.length || !m.length) return false;
  if (mode === 'exact') return m.length === k.length && k.every((w, i) => m[i] === w);
  if (mode === 'starts_with') return k.every((w, i) => m[i] === w);
  outer: for (let start = 0; start + k.length <= m.length; start++) {
    for (let i = 0; i < k.length; i++) if (m[start + i] !== k[i]) continue outer;
    return true;
  }
  return false;
}
