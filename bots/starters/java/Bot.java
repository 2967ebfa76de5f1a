// A starter bot for astragal, in Java 17, standard library only.
//
// Copy this folder and change `choose`. The protocol is in docs/protocol.md; each
// game's observation is documented in docs/rules/<game>.md. This bot beats the
// built-in `first` at every game: the Game of Ur and Cuatto with a one-move
// heuristic each, Spartan Yahtzee with one rule, Utara and Uptick with a random
// legal move (which beats `first` there).
//
// The observation is JSON; `Json` below is a small reader for it (no library: a
// ladder's `java` runtime has only the JDK's own).

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

public final class Bot {
    static final String NAME = "starter-java";

    /**
     * Reads one JSON document into plain Java values: Map (object), List (array),
     * String, Double (number), Boolean, or null. Throws IllegalArgumentException on
     * malformed input.
     */
    static final class Json {
        private final String s;
        private int at;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String s) {
            Json j = new Json(s);
            Object v = j.value();
            j.space();
            if (j.at != s.length()) throw j.fail("text after the value");
            return v;
        }

        private IllegalArgumentException fail(String what) {
            return new IllegalArgumentException("JSON: " + what + " at character " + at);
        }

        private void space() {
            while (at < s.length() && " \t\r\n".indexOf(s.charAt(at)) >= 0) at++;
        }

        private char peek() {
            space();
            if (at >= s.length()) throw fail("unexpected end");
            return s.charAt(at);
        }

        private void expect(char c) {
            if (peek() != c) throw fail("expected '" + c + "'");
            at++;
        }

        private Object value() {
            char c = peek();
            if (c == '{') {
                at++;
                Map<String, Object> map = new LinkedHashMap<>();
                if (peek() == '}') {
                    at++;
                    return map;
                }
                while (true) {
                    String key = string();
                    expect(':');
                    map.put(key, value());
                    if (peek() == ',') {
                        at++;
                        continue;
                    }
                    expect('}');
                    return map;
                }
            }
            if (c == '[') {
                at++;
                List<Object> list = new ArrayList<>();
                if (peek() == ']') {
                    at++;
                    return list;
                }
                while (true) {
                    list.add(value());
                    if (peek() == ',') {
                        at++;
                        continue;
                    }
                    expect(']');
                    return list;
                }
            }
            if (c == '"') return string();
            if (s.startsWith("true", at)) {
                at += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", at)) {
                at += 5;
                return Boolean.FALSE;
            }
            if (s.startsWith("null", at)) {
                at += 4;
                return null;
            }
            int start = at;
            while (at < s.length() && "+-0123456789.eE".indexOf(s.charAt(at)) >= 0) at++;
            try {
                return Double.parseDouble(s.substring(start, at));
            } catch (NumberFormatException e) {
                at = start;
                throw fail("not a value");
            }
        }

        private String string() {
            expect('"');
            StringBuilder out = new StringBuilder();
            while (at < s.length() && s.charAt(at) != '"') {
                char c = s.charAt(at++);
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (at >= s.length()) throw fail("unfinished escape");
                char e = s.charAt(at++);
                switch (e) {
                    case 'n' -> out.append('\n');
                    case 't' -> out.append('\t');
                    case 'r' -> out.append('\r');
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'u' -> {
                        if (at + 4 > s.length()) throw fail("short \\u escape");
                        out.append((char) Integer.parseInt(s.substring(at, at + 4), 16));
                        at += 4;
                    }
                    default -> out.append(e); // \" \\ \/
                }
            }
            if (at >= s.length()) throw fail("unfinished string");
            at++;
            return out.toString();
        }
    }

    /** A protocol line's command word and key=value fields (`obs=` takes the rest of the line). */
    record Line(String command, Map<String, String> fields) {}

    static Line parse(String line) {
        Map<String, String> fields = new HashMap<>();
        String head = line;
        int obs = line.indexOf(" obs=");
        if (obs >= 0) {
            fields.put("obs", line.substring(obs + 5));
            head = line.substring(0, obs);
        }
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean quoted = false, any = false;
        for (int i = 0; i < head.length(); i++) {
            char c = head.charAt(i);
            if (quoted && c == '\\' && i + 1 < head.length()) {
                word.append(head.charAt(++i));
            } else if (c == '"') {
                quoted = !quoted;
                any = true;
            } else if (!quoted && (c == ' ' || c == '\t')) {
                if (any) words.add(word.toString());
                word.setLength(0);
                any = false;
            } else {
                word.append(c);
                any = true;
            }
        }
        if (any) words.add(word.toString());
        if (words.isEmpty()) return new Line("", fields);
        for (String w : words.subList(1, words.size())) {
            int eq = w.indexOf('=');
            if (eq > 0) fields.put(w.substring(0, eq), w.substring(eq + 1));
        }
        return new Line(words.get(0), fields);
    }

    static final List<String> BIRDS = List.of("swallow", "storm", "raven", "rooster", "eagle");

    static int house(Object number) {
        return ((Double) number).intValue();
    }

    /** How good a move of the Game of Ur looks, from the observation alone. */
    @SuppressWarnings("unchecked")
    static double urScore(Map<String, Object> obs, String move) {
        if (move.equals("gamble")) return -1;
        int seat = house(obs.get("seat"));
        List<List<Object>> pieces = (List<List<Object>>) obs.get("pieces");
        List<Object> mine = pieces.get(seat), theirs = pieces.get(1 - seat);
        int from;
        String toText;
        int colon = move.indexOf(':');
        if (colon >= 0) { // tablet rules: <bird>:<house>
            from = house(mine.get(BIRDS.indexOf(move.substring(0, colon))));
            toText = move.substring(colon + 1);
        } else { // finkel rules: <from>-<to>
            int dash = move.indexOf('-');
            from = Integer.parseInt(move.substring(0, dash));
            toText = move.substring(dash + 1);
        }
        if (toText.equals("off")) return 20;
        int to = Integer.parseInt(toText);
        double score = to / 20.0;
        boolean captures = theirs.stream().anyMatch(t -> house(t) == to);
        if (to >= 5 && to <= 12 && captures) score += 12; // a capture sends the other piece home
        if (to == 4 || to == 8 || to == 14) score += 8; // rosettes are safe and pay
        if (from == 0) score += 4; // enter pieces while the roll allows
        if (from >= 5 && from <= 12 && from != 8) score += 2; // leave the shared row, where pieces are taken
        boolean inReach = theirs.stream().anyMatch(t -> to - house(t) >= 1 && to - house(t) <= 4);
        if (to >= 5 && to <= 12 && to != 8 && inReach) score -= 3; // within reach of a piece behind
        return score;
    }

    /** A Cuatto spot as a number: 0 (not entered) or 1..length; -1 for a bridge slot or `off`. */
    static int spotNumber(String spot) {
        String s = spot.replaceAll("[ps]+$", "");
        return s.matches("[0-9]+") ? Integer.parseInt(s) : -1;
    }

    /** How good a Cuatto sub-move (`<die>:<spot>`) looks, from the observation alone. */
    @SuppressWarnings("unchecked")
    static double cuattoScore(Map<String, Object> obs, String move) {
        int colon = move.indexOf(':');
        int die = Integer.parseInt(move.substring(0, colon));
        int from = spotNumber(move.substring(colon + 1));
        if (from < 0) return 1; // a bridge slot: move on
        int to = from + die;
        if (to > house(obs.get("length"))) return 20; // off the board
        int me = house(obs.get("seat"));
        List<List<Object>> teams = (List<List<Object>>) obs.get("teams");
        int oursTo = 0, oursFrom = 0, othersTo = 0;
        for (int t = 0; t < teams.size(); t++) {
            for (Object spot : teams.get(t)) {
                int at = spotNumber((String) spot);
                if (t == me) {
                    if (at == to) oursTo++;
                    if (at == from) oursFrom++;
                } else if (at == to) {
                    othersTo++;
                }
            }
        }
        double score = die / 10.0;
        if (oursTo >= 1) score += 3 + 8 * othersTo; // a pair: safe, and it hits what is there
        if (from > 0 && oursFrom == 2) score -= 2; // it would leave a lone checker behind
        if (from == 0) score += 1; // enter checkers
        return score;
    }

    /** Spartan Yahtzee: stand, but roll every Hoplite (4) again, hoping for a Phalanx. */
    @SuppressWarnings("unchecked")
    static String spartanChoice(Map<String, Object> obs, List<String> legal) {
        long fours = ((List<Object>) obs.get("your_dice")).stream().filter(d -> house(d) == 4).count();
        String reroll = "reroll:" + "4".repeat((int) fours);
        if (fours > 0 && legal.contains(reroll)) return reroll;
        return legal.contains("stand") ? "stand" : legal.get(0);
    }

    /** The legal move `score` likes best (the first of equals). */
    static String bestBy(List<String> legal, java.util.function.ToDoubleFunction<String> score) {
        String best = legal.get(0);
        double bestScore = score.applyAsDouble(best);
        for (String m : legal) {
            double s = score.applyAsDouble(m);
            if (s > bestScore) {
                best = m;
                bestScore = s;
            }
        }
        return best;
    }

    static final Random RNG = new Random();

    @SuppressWarnings("unchecked")
    static String choose(String game, Object obs, List<String> legal) {
        Map<String, Object> o = (Map<String, Object>) obs;
        return switch (game) {
            case "ur" -> bestBy(legal, m -> urScore(o, m));
            case "cuatto" -> bestBy(legal, m -> cuattoScore(o, m));
            case "spartan" -> spartanChoice(o, legal);
            default -> legal.get(RNG.nextInt(legal.size()));
        };
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        // Flushed by hand after each answer: the referee waits for every line.
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String game = "";
        String text;
        while ((text = in.readLine()) != null) {
            Line line = parse(text);
            Map<String, String> f = line.fields();
            switch (line.command()) {
                case "astragal" -> out.print("id name=" + NAME + " author=you\nastragalok version=1\n");
                case "newgame" -> {
                    game = f.getOrDefault("game", "");
                    // The same game plays the same way: randomness seeded from its salt.
                    RNG.setSeed(Long.parseUnsignedLong(f.getOrDefault("salt", "0")));
                }
                case "isready" -> out.print("readyok\n");
                case "go" -> {
                    String move = choose(game, Json.parse(f.get("obs")), List.of(f.get("legal").split(",")));
                    out.print("move id=" + f.get("id") + " move=" + move + "\n");
                }
                case "quit" -> {
                    out.flush();
                    return;
                }
                default -> {} // played, gameover, setoption, new commands: ignored
            }
            out.flush();
        }
    }
}
