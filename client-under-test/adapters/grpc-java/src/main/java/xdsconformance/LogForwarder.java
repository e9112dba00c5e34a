package xdsconformance;

import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * grpc-java's xDS log as `log` events (ADAPTER_PROTOCOL.md, "The client's log"): a
 * java.util.logging handler on the {@code io.grpc.xds} loggers that forwards each record at INFO
 * and above with its level (SEVERE error, WARNING warning, INFO info), once hello is out.
 *
 * <p>The levels below INFO (CONFIG, FINE, FINER, FINEST) are java.util.logging's debug levels, and
 * grpc-java uses them so: its XdsLogger writes its own INFO at FINER and its own WARNING and ERROR
 * at FINE (XdsLogger.toJavaLogLevel), keeping WARNING and INFO for what users are meant to see
 * (FORCE_WARNING, FORCE_INFO). Those records stay on stderr only.
 */
final class LogForwarder extends Handler {
  /** Set once hello is sent: the protocol allows no line before it. */
  static volatile boolean ready;

  /** The logger it is attached to, held: java.util.logging keeps loggers weakly. */
  private static Logger attachedTo;

  private final Formatter formatter = new SimpleFormatter();

  private LogForwarder() {
    setLevel(Level.INFO);
  }

  /** Attaches a forwarder to the io.grpc.xds loggers. */
  static synchronized void attach() {
    if (attachedTo == null) {
      attachedTo = Logger.getLogger("io.grpc.xds");
      attachedTo.addHandler(new LogForwarder());
    }
  }

  @Override
  public void publish(LogRecord record) {
    if (!ready || record == null || !isLoggable(record)) {
      return;
    }
    int level = record.getLevel().intValue();
    String name;
    if (level >= Level.SEVERE.intValue()) {
      name = "error";
    } else if (level >= Level.WARNING.intValue()) {
      name = "warning";
    } else {
      name = "info";
    }
    String message = formatter.formatMessage(record);
    if (record.getThrown() != null) {
      message = message + ": " + record.getThrown();
    }
    Adapter.log(name, message);
  }

  @Override
  public void flush() {}

  @Override
  public void close() {}
}
