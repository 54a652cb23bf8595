// What the gateway does with a capability's input schema, for the fake backend: a plan's params
// read back from its request, the form a flat schema makes, the refusal of params that do not fit,
// and what differs between two sets of params. The Rust side does the same for the real console.
import type { FormField, FormFieldKind, RequestView } from './types';

export type Schema = {
  type?: string;
  enum?: unknown[];
  title?: string;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  minimum?: number;
  maximum?: number;
};

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');
const unescape = (part: string) => part.replace(/~1/g, '/').replace(/~0/g, '~');
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

function schemaAt(schema: Schema | undefined, parts: string[]): Schema | undefined {
  return parts.reduce<Schema | undefined>((s, part) => s?.properties?.[part], schema);
}

/** The params a request signs: each pointer's text back as its value, typed by the schema where it
 *  says (a string property stays a string, "14" or not). */
export function paramsOf(request: RequestView, schema: Schema | undefined): Record<string, Json> {
  const params: Record<string, Json> = {};
  for (const { path, text } of request.params) {
    const parts = path.split('/').slice(1).map(unescape);
    const at = schemaAt(schema, parts);
    const stringy = at?.type === 'string' || (!at && !/^(-?\d+(\.\d+)?|true|false|null)$/.test(text));
    let value: Json = text;
    if (!stringy) {
      try {
        value = JSON.parse(text) as Json;
      } catch {
        value = text;
      }
    }
    let into: Record<string, Json> = params;
    for (const part of parts.slice(0, -1)) {
      if (!isObject(into[part])) into[part] = {};
      into = into[part] as Record<string, Json>;
    }
    into[parts[parts.length - 1]] = value;
  }
  return params;
}

/** Every scalar in `value` by its JSON pointer, in document order. */
export function leaves(value: unknown, path = ''): [string, Json][] {
  if (isObject(value)) return Object.entries(value).flatMap(([k, v]) => leaves(v, `${path}/${escape(k)}`));
  if (Array.isArray(value)) return value.flatMap((v, n) => leaves(v, `${path}/${n}`));
  return [[path, value as Json]];
}

/** A value as a request shows it: strings as they are, anything else as JSON. */
export const shown = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** The pointers whose values differ between `before` and `after`, with both (undefined: absent). */
export function differences(before: unknown, after: unknown): { path: string; before: Json | undefined; after: Json | undefined }[] {
  const old = new Map(leaves(before));
  const now = new Map(leaves(after));
  const paths = [...new Set([...old.keys(), ...now.keys()])];
  return paths
    .filter((p) => JSON.stringify(old.get(p)) !== JSON.stringify(now.get(p)))
    .map((path) => ({ path, before: old.get(path), after: now.get(path) }));
}

/** A schema for params no catalogue entry describes: their own shape. */
export function inferred(params: unknown): Schema {
  if (isObject(params)) return { type: 'object', properties: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, inferred(v)])) };
  if (Array.isArray(params)) return { type: 'array' };
  if (Number.isInteger(params)) return { type: 'integer' };
  if (params === null) return {};
  return { type: typeof params };
}

const SCALAR: Record<string, FormFieldKind> = { string: 'string', integer: 'integer', number: 'number', boolean: 'boolean' };

/** One field per property when the schema is a flat object of scalars; null otherwise. */
export function formOf(schema: Schema): FormField[] | null {
  if (schema.type !== 'object' || !schema.properties) return null;
  const fields: FormField[] = [];
  for (const [name, p] of Object.entries(schema.properties)) {
    // As the console reads a schema: an enum of strings or of numbers is a choice, a mixed one JSON.
    const enumKind = !p.enum ? undefined : p.enum.every((e) => typeof e === 'string') ? 'choice'
      : p.enum.every((e) => typeof e === 'number') ? 'number_choice' : null;
    if (enumKind === null) return null;
    const kind: FormFieldKind | undefined = enumKind ?? SCALAR[p.type ?? ''];
    if (!kind) return null;
    fields.push({
      name, label: p.title ?? name, kind, choices: (p.enum ?? []).map(String),
      required: schema.required?.includes(name) ?? false, description: p.description ?? null,
    });
  }
  return fields;
}

/** Why `value` does not fit `schema`, naming the field; null when it fits. */
export function invalid(schema: Schema, value: unknown, path = ''): string | null {
  const field = path || 'the request';
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    return `${field} must be one of ${schema.enum.map(String).join(', ')}`;
  }
  switch (schema.type) {
    case 'object': {
      if (!isObject(value)) return `${field} must be an object`;
      for (const name of schema.required ?? []) if (!(name in value)) return `${path}/${name} is required`;
      for (const [k, v] of Object.entries(value)) {
        const sub = schema.properties?.[k];
        if (!sub) {
          if (schema.additionalProperties === false) return `${path}/${k} is not a parameter of this capability`;
          continue;
        }
        const why = invalid(sub, v, `${path}/${escape(k)}`);
        if (why) return why;
      }
      return null;
    }
    case 'integer':
      if (!Number.isInteger(value)) return `${field} must be a whole number`;
      break;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return `${field} must be a number`;
      break;
    case 'string':
      if (typeof value !== 'string') return `${field} must be text`;
      break;
    case 'boolean':
      if (typeof value !== 'boolean') return `${field} must be true or false`;
      break;
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return `${field} must be at least ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `${field} must be at most ${schema.maximum}`;
  }
  return null;
}
