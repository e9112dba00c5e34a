// {{NAME}}: an xds-conformance adapter (the protocol: the book's "Adapter
// protocol" page). It speaks JSON lines on stdin/stdout; stdout is the
// protocol's alone, so everything else (your client's logs) goes to stderr.
// Run as a single source file (`java Adapter.java`); move it into your
// build (Maven, Gradle) when it needs your client's jars.
//
// What to fill in is marked TODO: start your client from the bootstrap the
// harness wrote (GRPC_XDS_BOOTSTRAP), add and remove its resource watchers,
// and report what they hear as `watcher` events. Until then every watch is
// answered and hears nothing, so the first run shows what to fill in.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

public class Adapter {
  /** Writes one protocol line; watcher callbacks may call it from any thread. */
  static synchronized void send(String json) {
    System.out.print(json + "\n");
    System.out.flush();
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  public static void main(String[] args) throws Exception {
    // TODO: create your xDS client from System.getenv("GRPC_XDS_BOOTSTRAP").
    send("{\"event\":\"hello\",\"protocol\":1,\"client\":\"{{NAME}}\",\"version\":\"0\","
        + "\"capabilities\":{\"watch\":true}}");
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      Map<String, Object> command = new Json(line).object();
      long id = ((Number) command.get("id")).longValue();
      Object op = command.get("op");
      String reply = "{\"id\":" + id + ",\"ok\":true}";
      if ("watch".equals(op)) {
        // TODO: start a watcher of (command.get("type"), command.get("name"))
        // and, from its callbacks, send a "watcher" event: kind "changed"
        // with a "summary" (or resource_error / ambient_error with "code"
        // and "message", does_not_exist).
      } else if ("cancel_watch".equals(op)) {
        // TODO: cancel the most recent watcher of (type, name).
      } else if ("shutdown".equals(op)) {
        send(reply);
        System.exit(0);
      } else {
        reply = "{\"id\":" + id + ",\"ok\":false,\"error\":" + quote("unsupported: " + op) + "}";
      }
      send(reply);
    }
  }

  /** Just enough JSON for the harness's commands: objects, strings, numbers, booleans, null. */
  static final class Json {
    private final String s;
    private int i;

    Json(String s) {
      this.s = s;
    }

    Map<String, Object> object() {
      Map<String, Object> map = new LinkedHashMap<>();
      expect('{');
      if (peek() == '}') {
        i++;
        return map;
      }
      do {
        String key = string();
        expect(':');
        map.put(key, value());
      } while (next() == ',');
      if (s.charAt(i - 1) != '}') throw new IllegalArgumentException("expected } at " + i);
      return map;
    }

    private Object value() {
      char c = peek();
      if (c == '{') return object();
      if (c == '"') return string();
      if (c == '[') {
        java.util.List<Object> list = new java.util.ArrayList<>();
        i++;
        if (peek() == ']') {
          i++;
          return list;
        }
        do list.add(value());
        while (next() == ',');
        return list;
      }
      int start = i;
      while (i < s.length() && ",}] \t".indexOf(s.charAt(i)) < 0) i++;
      String word = s.substring(start, i);
      if (word.equals("true") || word.equals("false")) return Boolean.valueOf(word);
      if (word.equals("null")) return null;
      return Double.valueOf(word);
    }

    private String string() {
      expect('"');
      StringBuilder b = new StringBuilder();
      for (char c; (c = s.charAt(i++)) != '"'; ) {
        if (c != '\\') {
          b.append(c);
          continue;
        }
        char e = s.charAt(i++);
        switch (e) {
          case 'n': b.append('\n'); break;
          case 't': b.append('\t'); break;
          case 'r': b.append('\r'); break;
          case 'b': b.append('\b'); break;
          case 'f': b.append('\f'); break;
          case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
          default: b.append(e);
        }
      }
      return b.toString();
    }

    private char peek() {
      while (Character.isWhitespace(s.charAt(i))) i++;
      return s.charAt(i);
    }

    private char next() {
      char c = peek();
      i++;
      return c;
    }

    private void expect(char c) {
      if (next() != c) throw new IllegalArgumentException("expected " + c + " at " + (i - 1));
    }
  }
}
