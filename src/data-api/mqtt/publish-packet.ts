/** The largest Remaining Length MQTT can express (four bytes of variable length, §2.2.3). */
const MAX_REMAINING_LENGTH = 268_435_455;

/**
 * A QoS 0 PUBLISH as bytes (MQTT 3.1 and 3.1.1 §3.3, the same layout in both): fixed header 0x30
 * (no DUP, no RETAIN), Remaining Length, the topic as a length-prefixed UTF-8 string, the payload.
 * QoS 0 has no packet identifier, so one encoding serves every subscriber of the message.
 */
export function encodePublish(topic: string, payload: Buffer): Buffer {
  const topicBytes = Buffer.byteLength(topic, 'utf8');
  if (topicBytes > 0xffff) throw new RangeError('an MQTT topic holds at most 65,535 bytes');
  const remaining = 2 + topicBytes + payload.length;
  if (remaining > MAX_REMAINING_LENGTH) throw new RangeError(`an MQTT packet holds at most ${MAX_REMAINING_LENGTH} bytes after its fixed header`);
  const lengthBytes = remaining < 0x80 ? 1 : remaining < 0x4000 ? 2 : remaining < 0x200000 ? 3 : 4;
  const packet = Buffer.allocUnsafe(1 + lengthBytes + remaining);
  packet[0] = 0x30;
  let at = 1;
  for (let left = remaining; ;) {
    const low = left % 0x80;
    left = Math.floor(left / 0x80);
    packet[at++] = left > 0 ? low | 0x80 : low;
    if (left === 0) break;
  }
  at = packet.writeUInt16BE(topicBytes, at);
  at += packet.write(topic, at, 'utf8');
  payload.copy(packet, at);
  return packet;
}
