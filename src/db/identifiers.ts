/** Quotes an identifier for SQL text: `trunk_calls` → `"trunk_calls"`. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A schema-qualified, quoted name for SQL text: `"telephony"."trunk_calls"`. */
export function qualifiedName(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}
