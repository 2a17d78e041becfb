package io.apm.aggregator;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The state value of one dedup key: the samples it has seen ({@link SeenSamples}) and the
 * {@code BY server} partials it holds until their windows complete ({@link HeldPartials}).
 *
 * <p>Two layouts, told apart by the first byte. Version 1 is {@link SeenSamples}' own encoding
 * alone, what every checkpoint before v5 holds: it is read as a key with no partials held, so
 * a running job's checkpoint is read on as it is. Version 2, written from v5 on, is the
 * version byte, the seen samples' encoding (its length first) and the held partials.
 */
public final class KeyState {
  private static final byte VERSION = 2;

  public final SeenSamples seen;
  public final HeldPartials held;

  public KeyState(SeenSamples seen, HeldPartials held) {
    this.seen = seen;
    this.held = held;
  }

  public static KeyState empty() {
    return new KeyState(new SeenSamples(), new HeldPartials());
  }

  public byte[] encode() {
    byte[] samples = seen.encode();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(samples.length + 64);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(VERSION);
      out.writeInt(samples.length);
      out.write(samples);
      held.write(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  public static KeyState decode(byte[] bytes) {
    if (bytes.length > 0 && bytes[0] != VERSION) {
      return new KeyState(SeenSamples.decode(bytes), new HeldPartials());
    }
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      in.readByte();
      byte[] samples = new byte[in.readInt()];
      in.readFully(samples);
      return new KeyState(SeenSamples.decode(samples), HeldPartials.read(in));
    } catch (IOException e) {
      throw new IllegalArgumentException("not a dedup key's state value", e);
    }
  }
}
