/** Text that is not exactly one valid JSON value. */
export declare class CanonicalError extends Error {}

/**
 * The canonical form of one JSON value, byte for byte as Go's
 * support/canonical: keys sorted by UTF-8 bytes, no whitespace, numbers as
 * written, strings as Go's encoding/json writes them without HTML escaping.
 * @throws CanonicalError when the input is not valid JSON.
 */
export declare function canonicalize(input: string | Uint8Array): string;
/** Canonical bytes, or null when the input is not valid JSON. */
export declare function canonicalBytes(input: string | Uint8Array): Uint8Array | null;
/** Whether the input is exactly one valid JSON value (Go's json.Valid). */
export declare function isValidJSON(input: string | Uint8Array): boolean;
/**
 * Hex SHA-256 of the canonical form, or of the bytes as they are when not
 * JSON: the args_hash tally stores on tool spans and players match by.
 */
export declare function argsHash(input: string | Uint8Array): string;
/** A JSON string literal for s, escaped as Go's encoding/json (HTML escaping off). */
export declare function quote(s: string | Uint8Array): string;
/** Go's json.Compact of valid JSON bytes. */
export declare function compactBytes(src: Uint8Array): Uint8Array;
/** JSON for a JavaScript value as Go's encoding/json encodes the equivalent Go value. */
export declare function encodeJSON(value: unknown): string;
/** The bytes a call's arguments are hashed from: strings and bytes as JSON text, other values encoded. */
export declare function argumentsBytes(args: unknown): Uint8Array;
export declare function toBytes(input: string | Uint8Array | ArrayBuffer): Uint8Array;
export declare function utf8(bytes: Uint8Array): string;
export declare function decodeRune(s: Uint8Array, i: number): [number, number];

export type Node =
  | { kind: 'object'; start: number; end: number; members: Array<{ key: string; node: Node }> }
  | { kind: 'array'; start: number; end: number; items: Node[] }
  | { kind: 'string'; start: number; end: number; value: string }
  | { kind: 'number'; start: number; end: number; raw: string }
  | { kind: 'true' | 'false' | 'null'; start: number; end: number };
/** A parse tree whose nodes know their byte range; null when not valid JSON. */
export declare function parseTree(src: Uint8Array): Node | null;
