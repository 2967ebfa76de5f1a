// A starter bot for astragal, in C++17, standard library only.
//
// Copy this folder and change `choose`. The protocol is in docs/protocol.md; each
// game's observation is documented in docs/rules/<game>.md. This bot beats the
// built-in `first` at every game: the Game of Ur and Cuatto with a one-move
// heuristic each, Spartan Yahtzee with one rule, Utara and Uptick with a random
// legal move (which beats `first` there).
//
// The observation is JSON; `Json` below is a small reader for it (no library:
// a ladder's `cc` runtime has only the compiler's own).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const char* const NAME = "starter-cpp";

// One JSON value: null, a boolean, a number, a string, an array or an object.
struct Json {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool boolean = false;
    double number = 0;
    std::string text;
    std::vector<Json> items;
    std::map<std::string, Json> fields;

    // The field `key` of an object (null if it has none).
    const Json& operator[](const std::string& key) const {
        static const Json none;
        auto it = fields.find(key);
        return it == fields.end() ? none : it->second;
    }
    // The item `i` of an array.
    const Json& operator[](std::size_t i) const { return items.at(i); }
    int as_int() const { return static_cast<int>(number); }
};

// Reads one JSON document; throws std::runtime_error on malformed input.
class JsonReader {
  public:
    explicit JsonReader(const std::string& s) : s_(s) {}

    Json document() {
        Json v = value();
        space();
        if (at_ != s_.size()) fail("text after the value");
        return v;
    }

  private:
    const std::string& s_;
    std::size_t at_ = 0;

    [[noreturn]] void fail(const char* what) {
        throw std::runtime_error(std::string("JSON: ") + what + " at byte " + std::to_string(at_));
    }
    void space() {
        while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
    }
    char peek() {
        space();
        if (at_ >= s_.size()) fail("unexpected end");
        return s_[at_];
    }
    void expect(char c) {
        if (peek() != c) fail("unexpected character");
        ++at_;
    }
    bool word(const char* w) {
        std::string ws(w);
        if (s_.compare(at_, ws.size(), ws) != 0) return false;
        at_ += ws.size();
        return true;
    }

    Json value() {
        Json v;
        char c = peek();
        if (c == '{') {
            v.kind = Json::Object;
            ++at_;
            if (peek() == '}') return ++at_, v;
            for (;;) {
                std::string key = string();
                expect(':');
                v.fields[key] = value();
                if (peek() == ',') { ++at_; continue; }
                expect('}');
                return v;
            }
        }
        if (c == '[') {
            v.kind = Json::Array;
            ++at_;
            if (peek() == ']') return ++at_, v;
            for (;;) {
                v.items.push_back(value());
                if (peek() == ',') { ++at_; continue; }
                expect(']');
                return v;
            }
        }
        if (c == '"') {
            v.kind = Json::String;
            v.text = string();
            return v;
        }
        if (word("true")) { v.kind = Json::Bool; v.boolean = true; return v; }
        if (word("false")) { v.kind = Json::Bool; return v; }
        if (word("null")) return v;
        const char* begin = s_.c_str() + at_;
        char* end = nullptr;
        v.number = std::strtod(begin, &end);
        if (end == begin) fail("not a value");
        v.kind = Json::Number;
        at_ += static_cast<std::size_t>(end - begin);
        return v;
    }

    std::string string() {
        expect('"');
        std::string out;
        while (at_ < s_.size() && s_[at_] != '"') {
            char c = s_[at_++];
            if (c != '\\') { out += c; continue; }
            if (at_ >= s_.size()) fail("unfinished escape");
            char e = s_[at_++];
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'u': {
                    // Only ASCII comes in observations; keep other code points as '?'.
                    if (at_ + 4 > s_.size()) fail("short \\u escape");
                    unsigned code = std::stoul(s_.substr(at_, 4), nullptr, 16);
                    at_ += 4;
                    out += code < 0x80 ? static_cast<char>(code) : '?';
                    break;
                }
                default: out += e;  // \" \\ \/
            }
        }
        if (at_ >= s_.size()) fail("unfinished string");
        ++at_;
        return out;
    }
};

// A protocol line: its command word and its key=value fields (`obs=` takes the
// rest of the line; a value may be quoted, with \" and \\ escapes).
struct Line {
    std::string command;
    std::map<std::string, std::string> fields;
};

Line parse(const std::string& line) {
    Line out;
    std::string head = line;
    auto obs = line.find(" obs=");
    if (obs != std::string::npos) {
        out.fields["obs"] = line.substr(obs + 5);
        head = line.substr(0, obs);
    }
    std::vector<std::string> words;
    std::string word;
    bool quoted = false, any = false;
    for (std::size_t i = 0; i < head.size(); ++i) {
        char c = head[i];
        if (quoted && c == '\\' && i + 1 < head.size()) {
            word += head[++i];
        } else if (c == '"') {
            quoted = !quoted;
            any = true;
        } else if (!quoted && (c == ' ' || c == '\t')) {
            if (any) words.push_back(word);
            word.clear();
            any = false;
        } else {
            word += c;
            any = true;
        }
    }
    if (any) words.push_back(word);
    if (words.empty()) return out;
    out.command = words[0];
    for (std::size_t i = 1; i < words.size(); ++i) {
        auto eq = words[i].find('=');
        if (eq != std::string::npos && eq > 0) out.fields[words[i].substr(0, eq)] = words[i].substr(eq + 1);
    }
    return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, sep)) out.push_back(item);
    return out;
}

const std::vector<std::string> BIRDS = {"swallow", "storm", "raven", "rooster", "eagle"};

bool holds(const Json& pieces, int house) {
    for (const Json& p : pieces.items)
        if (p.as_int() == house) return true;
    return false;
}

// How good a move of the Game of Ur looks, from the observation alone.
double ur_score(const Json& obs, const std::string& move) {
    if (move == "gamble") return -1;
    int seat = obs["seat"].as_int();
    const Json& mine = obs["pieces"][static_cast<std::size_t>(seat)];
    const Json& theirs = obs["pieces"][static_cast<std::size_t>(1 - seat)];
    int from;
    std::string to_text;
    auto colon = move.find(':');
    if (colon != std::string::npos) {  // tablet rules: <bird>:<house>
        auto bird = std::find(BIRDS.begin(), BIRDS.end(), move.substr(0, colon));
        from = mine[static_cast<std::size_t>(bird - BIRDS.begin())].as_int();
        to_text = move.substr(colon + 1);
    } else {  // finkel rules: <from>-<to>
        auto dash = move.find('-');
        from = std::stoi(move.substr(0, dash));
        to_text = move.substr(dash + 1);
    }
    if (to_text == "off") return 20;
    int to = std::stoi(to_text);
    double score = to / 20.0;
    if (to >= 5 && to <= 12 && holds(theirs, to)) score += 12;  // a capture sends the other piece home
    if (to == 4 || to == 8 || to == 14) score += 8;              // rosettes are safe and pay
    if (from == 0) score += 4;                                  // enter pieces while the roll allows
    if (from >= 5 && from <= 12 && from != 8) score += 2;       // leave the shared row, where pieces are taken
    if (to >= 5 && to <= 12 && to != 8) {
        for (const Json& t : theirs.items)
            if (to - t.as_int() >= 1 && to - t.as_int() <= 4) {
                score -= 3;  // within reach of a piece behind
                break;
            }
    }
    return score;
}

// A Cuatto spot as a number: 0 (not entered) or 1..length; -1 for a bridge
// slot (`b3`) or `off`. A trailing `p` (pin) or `s` (strong) is dropped.
int spot_number(std::string spot) {
    while (!spot.empty() && (spot.back() == 'p' || spot.back() == 's')) spot.pop_back();
    if (spot.empty() || spot.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(spot);
}

// How good a Cuatto sub-move (`<die>:<spot>`) looks, from the observation alone.
double cuatto_score(const Json& obs, const std::string& move) {
    auto colon = move.find(':');
    int die = std::stoi(move.substr(0, colon));
    int from = spot_number(move.substr(colon + 1));
    if (from < 0) return 1;  // a bridge slot: move on
    int to = from + die;
    if (to > obs["length"].as_int()) return 20;  // off the board
    std::size_t me = static_cast<std::size_t>(obs["seat"].as_int());
    int ours_to = 0, ours_from = 0, others_to = 0;
    const Json& teams = obs["teams"];
    for (std::size_t t = 0; t < teams.items.size(); ++t) {
        for (const Json& spot : teams[t].items) {
            int at = spot_number(spot.text);
            if (t == me) {
                ours_to += at == to;
                ours_from += at == from;
            } else {
                others_to += at == to;
            }
        }
    }
    double score = die / 10.0;
    if (ours_to >= 1) score += 3 + 8 * others_to;  // a pair: safe, and it hits what is there
    if (from > 0 && ours_from == 2) score -= 2;    // it would leave a lone checker behind
    if (from == 0) score += 1;                     // enter checkers
    return score;
}

// Spartan Yahtzee: stand, but roll every Hoplite (4) again, hoping for a Phalanx.
std::string spartan_choice(const Json& obs, const std::vector<std::string>& legal) {
    std::string fours;
    for (const Json& die : obs["your_dice"].items)
        if (die.as_int() == 4) fours += '4';
    for (const std::string& m : {fours.empty() ? std::string("stand") : "reroll:" + fours, std::string("stand")})
        if (std::find(legal.begin(), legal.end(), m) != legal.end()) return m;
    return legal[0];
}

// The legal move `score` likes best (the first of equals).
template <typename Score>
std::string best_by(const std::vector<std::string>& legal, Score score) {
    std::string best = legal[0];
    double best_score = score(best);
    for (const std::string& m : legal) {
        double s = score(m);
        if (s > best_score) best = m, best_score = s;
    }
    return best;
}

std::mt19937_64 rng;

std::string choose(const std::string& game, const Json& obs, const std::vector<std::string>& legal) {
    if (game == "ur") return best_by(legal, [&](const std::string& m) { return ur_score(obs, m); });
    if (game == "cuatto") return best_by(legal, [&](const std::string& m) { return cuatto_score(obs, m); });
    if (game == "spartan") return spartan_choice(obs, legal);
    return legal[std::uniform_int_distribution<std::size_t>(0, legal.size() - 1)(rng)];
}

}  // namespace

int main() {
    std::ios::sync_with_stdio(false);
    std::string game, text;
    while (std::getline(std::cin, text)) {
        if (!text.empty() && text.back() == '\r') text.pop_back();
        Line line = parse(text);
        if (line.command == "astragal") {
            std::cout << "id name=" << NAME << " author=you\nastragalok version=1" << std::endl;
        } else if (line.command == "newgame") {
            game = line.fields["game"];
            // The same game plays the same way: randomness seeded from its salt.
            rng.seed(std::strtoull(line.fields["salt"].c_str(), nullptr, 10));
        } else if (line.command == "isready") {
            std::cout << "readyok" << std::endl;
        } else if (line.command == "go") {
            Json obs = JsonReader(line.fields["obs"]).document();
            std::string move = choose(game, obs, split(line.fields["legal"], ','));
            std::cout << "move id=" << line.fields["id"] << " move=" << move << std::endl;
        } else if (line.command == "quit") {
            return 0;
        }
        // Everything else (played, gameover, setoption, new commands) is ignored.
    }
    return 0;
}
