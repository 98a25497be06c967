/** A box `[minx, miny, maxx, maxy]`. */
export type Box = readonly [number, number, number, number];

/** The smallest box holding every one of `boxes`; null when there is none. */
export function unionOfBoxes(boxes: readonly Box[]): [number, number, number, number] | null {
  if (boxes.length === 0) return null;
  return [
    Math.min(...boxes.map((box) => box[0])), Math.min(...boxes.map((box) => box[1])),
    Math.max(...boxes.map((box) => box[2])), Math.max(...boxes.map((box) => box[3])),
  ];
}
