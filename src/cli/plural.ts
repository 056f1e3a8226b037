/**
 * `1 request`, `2 requests`, `1,200 accounts`: a count and its noun, the noun in the plural unless
 * the count is one. Pure; `many` for nouns whose plural is not the noun and an s.
 */
export function plural(count: number, noun: string, many = `${noun}s`): string {
  return `${new Intl.NumberFormat('en-US').format(count)} ${count === 1 ? noun : many}`;
}
