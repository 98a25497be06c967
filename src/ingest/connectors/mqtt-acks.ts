import type { MqttClient, Packet } from 'mqtt';

/**
 * Holding back the PUBACK (QoS 1) and PUBREC (QoS 2) of incoming messages until the records they
 * carried committed, without holding back MQTT.js's reading of the next packets.
 *
 * Why a hook into MQTT.js (pinned at 5.16.0): MQTT.js writes the acknowledgement from the callback
 * of `handleMessage` (QoS 1) or of `customHandleAcks` (QoS 2), and it does not read the next packet
 * before that callback ran. Calling it only after a commit would handle one message per commit
 * (about 430 msg/s with a 2 ms commit); calling it at once would acknowledge messages whose
 * records may still be lost. MQTT.js has no option to separate the two, so the client's
 * `_sendPacket` is wrapped: an acknowledgement the connector announced with `hold` is kept (its
 * callback runs at once, so MQTT.js goes on reading) and written once `release` says its batch
 * committed. Acknowledgements go out in the order the PUBLISHes arrived, as MQTT 3.1.1 (4.6)
 * requires, whatever order the releases come in. test/ingest/mqtt-connector.test.ts pins this.
 *
 * One `AckHold` serves one connection: when it closes, held acknowledgements are dropped (`drop`),
 * since the broker sends those messages again on the next connection of the persistent session.
 */

type SendPacket = (packet: Packet, callback?: (error?: Error) => void, ...rest: unknown[]) => void;

/** The acknowledgement of one message, announced before MQTT.js produces it. */
export interface HeldAck {
  /** The batch holding the message's records committed: the acknowledgement may go out (in order). */
  release(): void;
}

export interface AckHold {
  /** Announces that the acknowledgement MQTT.js is about to send for `messageId` waits for `release`. */
  hold(messageId: number): HeldAck;
  /** Sends nothing more: the connection closed or the connector stops. */
  drop(): void;
  /** Acknowledgements announced and not yet sent (for tests and logs). */
  readonly pending: number;
}

interface Slot extends HeldAck {
  messageId: number;
  packet: Packet | null;
  committed: boolean;
}

const HELD_COMMANDS = new Set(['puback', 'pubrec']);

export function holdAcks(client: MqttClient): AckHold {
  const internals = client as unknown as { _sendPacket?: SendPacket };
  const original = internals._sendPacket;
  if (typeof original !== 'function') {
    // A newer MQTT.js without this method would otherwise acknowledge before commit, silently.
    throw new Error('this version of the mqtt package has no _sendPacket to hold acknowledgements with (pinned: 5.16.0)');
  }
  const send: SendPacket = original.bind(client);
  /** Every announced acknowledgement not yet sent, in the order the PUBLISHes arrived. */
  let slots: Slot[] = [];
  /** Announced ones whose packet MQTT.js has not produced yet, by message id. */
  const awaiting = new Map<number, Slot>();
  let dropped = false;

  const flush = () => {
    while (!dropped && slots.length > 0 && slots[0]!.committed && slots[0]!.packet !== null) {
      const slot = slots.shift()!;
      // A closed connection takes nothing more; MQTT.js would otherwise queue the packet for the next one.
      if (!client.connected) return drop();
      send(slot.packet!);
    }
  };

  const drop = () => {
    dropped = true;
    slots = [];
    awaiting.clear();
  };

  internals._sendPacket = (packet, callback, ...rest) => {
    if (!HELD_COMMANDS.has(packet.cmd)) return send(packet, callback, ...rest);
    const messageId = (packet as { messageId?: number }).messageId;
    const slot = messageId === undefined ? undefined : awaiting.get(messageId);
    if (slot !== undefined) {
      awaiting.delete(messageId!);
      slot.packet = packet;
      flush();
    }
    // An acknowledgement nobody announced (or announced on a connection since dropped) is not
    // sent: every message this connector takes is announced, so this is a stale one, and leaving
    // it out only means the broker sends the message again.
    callback?.();
  };

  return {
    hold(messageId) {
      const slot: Slot = {
        messageId,
        packet: null,
        committed: false,
        release: () => {
          slot.committed = true;
          flush();
        },
      };
      if (!dropped) {
        slots.push(slot);
        awaiting.set(messageId, slot);
      }
      return slot;
    },
    drop,
    get pending() {
      return slots.length;
    },
  };
}
