/** Values for the tests: the reference samples and seeded random values of every kitchen type. */
import type { Everything, ItemStack as KItemStack, Shape, Settings, Linked, Tree, Node, Pair, Input, EntitySnapshot, EntityState, Quantized, BlitRun, Nested, Deep, Moving, Thing, Rare } from './generated/kitchen.js';
import type { Inventory, PlayerInput, PlayerMoved, SpawnEntity, WorldSnapshot, ItemStack } from '../src/generated/reference.js';
import { Rng } from './helpers.js';

export const reference = {
  playerMoved: (): PlayerMoved => ({ entity: 7, position: { x: 1.5, y: -2.0, z: 3.25 } }),
  playerInput: (): PlayerInput => ({ tick: 1000, buttons: 0x5, aim: { x: 0.5, y: -1.0 }, stance: 'Crouching' }),
  spawnEntity: (): SpawnEntity => ({ entity: 42, prefab: 3, position: { x: 10, y: 0, z: -4 }, rotation: { x: 0, y: 0, z: 0, w: 1 }, name: 'Goblin' }),
  worldSnapshot: (n: number): WorldSnapshot => ({ tick: 500, players: Array.from({ length: n }, (_, i) => ({ entity: 100 + i, position: { x: i, y: 0.5, z: -i } })) }),
  inventory: (n: number): Inventory => ({
    owner: 9,
    slots: new Map(Array.from({ length: n }, (_, i): [number, ItemStack] => [i, { item: 1000 + i, count: i + 1, durability: 100 - (i % 100), flags: i % 4 }])),
  }),
};

const f32 = (r: Rng): number => r.f32();
const u32 = (r: Rng): number => r.next();
const vec3 = (r: Rng) => ({ x: f32(r), y: f32(r), z: f32(r) });

export const random = {
  playerMoved: (r: Rng): PlayerMoved => ({ entity: u32(r), position: vec3(r) }),
  playerInput: (r: Rng): PlayerInput => ({
    tick: u32(r),
    buttons: r.next() & 0x3f,
    aim: { x: f32(r), y: f32(r) },
    stance: (['Standing', 'Crouching', 'Prone'] as const)[r.below(3)]!,
  }),
  spawnEntity: (r: Rng): SpawnEntity => ({ entity: u32(r), prefab: r.next() & 0xffff, position: vec3(r), rotation: { ...vec3(r), w: f32(r) }, name: r.string(r.bool() ? 8 : 200) }),
  worldSnapshot: (r: Rng): WorldSnapshot => ({ tick: u32(r), players: Array.from({ length: r.below(50) }, () => ({ entity: u32(r), position: vec3(r) })) }),
  inventory: (r: Rng): Inventory => {
    const slots = new Map<number, ItemStack>();
    const n = r.below(200);
    for (let i = 0; i < n; i++) slots.set(u32(r), { item: u32(r), count: r.next() & 0xffff, durability: r.next() & 0xffff, flags: r.next() & 0xff });
    return { owner: u32(r), slots };
  },
};

function sortedMap<K, V>(entries: [K, V][], cmp: (a: K, b: K) => number): Map<K, V> {
  const m = new Map<K, V>();
  for (const [k, v] of entries.sort((a, b) => cmp(a[0], b[0]))) if (!m.has(k)) m.set(k, v);
  return m;
}

function codePointOrder(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

export const kitchen = {
  everything: (r: Rng): Everything => ({
    a: r.next() & 0xff,
    b: (r.next() & 0xff) - 128,
    c: r.next() & 0xffff,
    d: (r.next() & 0xffff) - 32768,
    e: u32(r),
    f: r.next() | 0,
    g: r.u64(),
    h: BigInt.asIntN(64, r.u64()),
    i: (r.u64() << 64n) | r.u64(),
    j: BigInt.asIntN(128, (r.u64() << 64n) | r.u64()),
    k: f32(r),
    l: r.bool() ? r.next() / 7 : -0,
    m: r.bool(),
    n: String.fromCodePoint([0x41, 0xe9, 0x1f600, 0, 0xffff, 0x10ffff][r.below(6)]!),
    o: r.bool() ? r.below(300) : Number.MAX_SAFE_INTEGER - r.below(10),
    p: r.bool() ? r.below(300) - 150 : (r.bool() ? 1 : -1) * (Number.MAX_SAFE_INTEGER - r.below(10)),
    q: null,
    r: 1 + r.below(0xfffffffe),
    s: r.bool() ? -1n : 0x7fffffffffffffffn,
    t: r.string(30),
    u: r.bytes(r.below(20)),
    v: r.bytes(r.below(20)),
    w: Array.from({ length: r.below(4) }, () => r.string(5)),
    x: [u32(r), u32(r), u32(r), u32(r)],
    y: r.bool() ? null : u32(r),
    z: [null, { some: null }, { some: r.string(4) }][r.below(3)]!,
    aa: [r.next() & 0xff, r.string(3)],
    bb: new Map(Array.from({ length: r.below(5) }, () => [u32(r), r.string(3)] as [number, string])),
    cc: sortedMap(Array.from({ length: r.below(5) }, () => [r.string(4), r.bytes(r.below(4))] as [string, Uint8Array]), codePointOrder),
    dd: vec3(r),
    ee: { ...vec3(r), w: f32(r) },
    ff: { x: r.next() | 0, y: r.next() | 0, z: r.next() | 0 },
    gg: { x: u32(r), y: u32(r) },
    hh: r.u64(),
    ii: { ...vec3(r), w: f32(r) },
    jj: r.bytes(3),
    kk: 1 + r.below(255),
    ll: new Map(Array.from({ length: r.below(3) }, (_, i) => [{ item: i, count: r.next() & 0xffff }, r.bool()] as [KItemStack, boolean])),
    mm: sortedMap(Array.from({ length: r.below(5) }, () => [r.next() | 0, r.next() & 0xff] as [number, number]), (a, b) => a - b),
    nn: Array.from({ length: r.below(4) }, () => [r.next() & 0xffff, f32(r)] as [number, number]),
  }),
  shape: (r: Rng): Shape => [{ tag: 'Nothing' } as const, { tag: 'Square', 0: r.next() / 3 } as const, { tag: 'Circle', radius: f32(r) } as const][r.below(3)]!,
  settings: (r: Rng): Settings => ({ volume: r.next() & 0xff, name: r.string(6) }),
  linked: (r: Rng): Linked => {
    let l: Linked = { value: r.next() & 0xff, next: null };
    for (let i = r.below(5); i > 0; i--) l = { value: r.next() & 0xff, next: l };
    return l;
  },
  tree: (r: Rng, depth = 4): Tree => (depth === 0 || r.below(3) === 0 ? { tag: 'Leaf', 0: r.next() & 0xff } : { tag: 'Node', 0: kitchen.tree(r, depth - 1), 1: kitchen.tree(r, depth - 1) }),
  node: (r: Rng, depth = 3): Node => ({ value: u32(r), children: depth === 0 ? [] : Array.from({ length: r.below(3) }, () => kitchen.node(r, depth - 1)) }),
  pair: (r: Rng): Pair => [u32(r), r.string(5)],
  input: (r: Rng): Input => ({ keys: [0, 1, 2, 3, 0x80, 0x83][r.below(6)]!, wide: [0n, 1n, 0x8000000000000000n, 0x8000000000000001n][r.below(4)]! }),
  entityState: (r: Rng, entity: number): EntityState => ({
    entity,
    position: [r.below(8192001), r.below(8192001), r.below(8192001)],
    heading: r.below(4096),
  }),
  entitySnapshot: (r: Rng): EntitySnapshot => ({ tick: u32(r), entities: Array.from({ length: r.below(20) }, (_, i) => kitchen.entityState(r, i * 3 + r.below(3))) }),
  quantized: (r: Rng): Quantized => ({ a: r.below(16000001), q: { largest: r.below(4), steps: [255, 255, 255] }, h: r.below(4096), p: [r.below(8192001), 0, 8192000] }),
  blitRun: (r: Rng): BlitRun => ({ tag: r.next() & 0xff, items: Array.from({ length: r.below(10) }, () => ({ a: u32(r), b: f32(r) })) }),
  nested: (r: Rng): Nested => [Array.from({ length: r.below(4) }, () => Array.from({ length: r.below(4) }, () => u32(r)))],
  deep: (r: Rng): Deep => [Array.from({ length: r.below(3) }, () => Array.from({ length: r.below(3) }, () => Array.from({ length: r.below(3) }, () => r.bytes(r.below(3)))))],
  thing: (r: Rng, id: number): Thing => ({
    id,
    pos: vec3(r),
    hp: (r.next() & 0xffff) - 32768,
    alive: r.bool(),
    rot: { largest: r.below(4), steps: [255 + r.below(50), 255 - r.below(50), 255] },
    big: r.u64(),
  }),
  moving: (r: Rng): Moving => ({ tick: BigInt(r.next()), things: Array.from({ length: r.below(10) }, (_, i) => kitchen.thing(r, i * 2)) }),
  rare: (r: Rng): Rare => ({ x: r.next() & 0xff }),
};
