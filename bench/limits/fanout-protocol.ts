/** The messages between the fan-out benchmark (fanout.ts) and its subscriber processes (fanout-subscribers.ts). */

export type ChildCommand =
  /** Connect `count` clients (ids `{idPrefix}-{n}`, numbered from `firstIndex` overall) and subscribe each to `topic`. */
  | { type: 'start'; mqttUrl: string; password: string; topic: string; count: number; firstIndex: number; idPrefix: string }
  /** Forget earlier arrivals and start measuring the event loop. */
  | { type: 'round-start' }
  /** How many messages arrived since the round started. */
  | { type: 'count' }
  /** Hand over the round's arrivals and event-loop delay. */
  | { type: 'round-end' }
  | { type: 'stop' };

export type ChildReply =
  | { type: 'ready'; connected: number; failed: number; firstError: string }
  | { type: 'count'; received: number }
  /** `arrivals`: flat [subscriber index, sequence number, wall-clock ms] triples. */
  | { type: 'round'; arrivals: number[]; loopP99Ms: number; loopMaxMs: number };
