import { MICROS_PER_DAY, MICROS_PER_SECOND, type EpochMicros } from '../../util/micros.js';
import { hashIndex, unitFraction } from './prng.js';

/**
 * When each simulated trunk call ends, as a pure function of its index: the calls are an endless
 * sequence i = 0, 1, 2, … whose end times never decrease, so a time range is an index range found
 * by binary search, and a count is a subtraction. No call is ever stored.
 *
 * Call i ends in its own slot [start + ⌊i·span/calls⌋, start + ⌊(i+1)·span/calls⌋) seconds, at a
 * hashed point inside it, where `start` is `days` before the anchor (the clock at startup). Calls
 * past the anchor keep coming at the same rate: live traffic, completed as the clock passes them.
 * Trunk times are whole seconds on the wire, so the timeline is kept in whole seconds.
 */
export interface CallTimeline {
  /** Epoch seconds at which call 0's slot begins. */
  readonly startSeconds: number;
  /** Seconds over which `calls` calls are spread. */
  readonly spanSeconds: number;
  /** Calls per span (0: no calls at all). */
  readonly calls: number;
  /** Hash key of the position of each call inside its slot. */
  readonly jitterKey: number;
}

export interface CallTimelineOptions {
  /** The clock at startup: the first `calls` calls end in the `days` before it. */
  anchorMicros: EpochMicros;
  days: number;
  calls: number;
  jitterKey: number;
}

/** Builds the timeline of one account's calls. */
export function createCallTimeline(options: CallTimelineOptions): CallTimeline {
  const spanSeconds = Math.round((options.days * MICROS_PER_DAY) / MICROS_PER_SECOND);
  return {
    startSeconds: floorDiv(options.anchorMicros, MICROS_PER_SECOND) - spanSeconds,
    spanSeconds,
    calls: options.calls,
    jitterKey: options.jitterKey,
  };
}

/** ⌊a / b⌋ for integers, exact (no rounding of a floating-point quotient). */
function floorDiv(a: number, b: number): number {
  const remainder = ((a % b) + b) % b;
  return (a - remainder) / b;
}

/** ⌊a·b / c⌋ for non-negative integers, exact even when a·b exceeds 2^53. */
function mulDivFloor(a: number, b: number, c: number): number {
  const product = a * b;
  if (Number.isSafeInteger(product)) return floorDiv(product, c);
  return Number((BigInt(a) * BigInt(b)) / BigInt(c));
}

/** Seconds from the timeline's start to the beginning of call i's slot. */
function slotStart(timeline: CallTimeline, index: number): number {
  return mulDivFloor(index, timeline.spanSeconds, timeline.calls);
}

/** Epoch seconds at which call `index` ends. Never decreases as the index grows. */
export function endSecondsAt(timeline: CallTimeline, index: number): number {
  const begin = slotStart(timeline, index);
  const length = slotStart(timeline, index + 1) - begin;
  const jitter =
    length > 0 ? Math.floor(unitFraction(hashIndex(timeline.jitterKey, index)) * length) : 0;
  return timeline.startSeconds + begin + jitter;
}

/** Epoch microseconds at which call `index` ends. */
export function endMicrosAt(timeline: CallTimeline, index: number): EpochMicros {
  return endSecondsAt(timeline, index) * MICROS_PER_SECOND;
}

/**
 * The first index whose call ends at or after `micros`: the calls before it all end earlier. With
 * it, the calls ending in [a, b] are the indices [first(a), first(b + 1)).
 */
export function firstIndexEndingAtOrAfter(timeline: CallTimeline, micros: EpochMicros): number {
  if (timeline.calls <= 0) return 0;
  const seconds = -floorDiv(-micros, MICROS_PER_SECOND);
  const sinceStart = seconds - timeline.startSeconds;
  if (sinceStart <= 0) return 0;
  // An index whose slot starts at or after the target: its call cannot end before it.
  // ⌈sinceStart·calls/span⌉, from the floor of the same quotient of one less.
  let high = mulDivFloor(sinceStart, timeline.calls, timeline.spanSeconds);
  if (mulDivFloor(high, timeline.spanSeconds, timeline.calls) < sinceStart) high += 1;
  let low = 0;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (endSecondsAt(timeline, middle) >= seconds) high = middle;
    else low = middle + 1;
  }
  return low;
}

/** Half-open index range [from, to) of the calls ending within [lowerMicros, upperMicros]. */
export function indexRangeEndingWithin(
  timeline: CallTimeline,
  lowerMicros: EpochMicros,
  upperMicros: EpochMicros,
): { from: number; to: number } {
  if (lowerMicros > upperMicros) return { from: 0, to: 0 };
  const from = firstIndexEndingAtOrAfter(timeline, lowerMicros);
  const to = firstIndexEndingAtOrAfter(timeline, upperMicros + 1);
  return { from, to: Math.max(from, to) };
}
