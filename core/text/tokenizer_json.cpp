// Reading a Hugging Face tokenizer.json: a BPE model and the steps around it that the families
// in use need (GPT-2; Llama 3 and Qwen: a Split pattern before ByteLevel, ignore_merges, NFC;
// Llama 2, TinyLlama and Mistral 7B: Prepend and Replace or Metaspace, characters with byte
// fallback; TemplateProcessing's tokens around a text). Anything else that would change the ids
// is refused by name: the file, the field, the value.
#include "core/base/error.hpp"
#include "core/base/json_text.hpp"
#include "core/text/byte_bpe.hpp"
#include "core/text/byte_bpe_builder.hpp"
#include "core/text/byte_bpe_impl.hpp"
#include "core/text/json_fields.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace attnviz::core {
namespace {

using bpe::Builder;
using bpe::flag;
using bpe::integerId;
using bpe::member;
using bpe::notRead;
using bpe::requireField;
using bpe::shown;
using bpe::string;
using bpe::typeOf;
using nlohmann::json;

// Bounds on the steps, far above any real file's (a pattern of a few hundred bytes, a handful of steps).
constexpr std::size_t kMaxPatternBytes = 4096;
constexpr std::size_t kMaxSteps = 16;

// A list of steps ("normalizers", "pretokenizers", "processors"), each read by `read`.
template <class Read>
void eachStep(const json& sequence, const char* key, const std::string& where, Read&& read) {
    const json* steps = member(sequence, key);
    if (!steps || !steps->is_array()) throw InputError(where + "." + key, "expected a list of steps");
    if (steps->size() > kMaxSteps) throw InputError(where + "." + key, "more than " + std::to_string(kMaxSteps) + " steps");
    for (std::size_t i = 0; i < steps->size(); ++i) read((*steps)[i], where + "." + key + "[" + std::to_string(i) + "]");
}

// normalizer: NFC, Prepend, Replace of a string, and Sequences of them.
void readNormalizer(const json& n, const std::string& where, std::vector<bpe::NormalizerStep>& steps) {
    const std::string& type = typeOf(n, where);
    if (type == "Sequence")
        return eachStep(n, "normalizers", where, [&](const json& s, const std::string& w) { readNormalizer(s, w, steps); });
    if (steps.size() >= kMaxSteps) throw InputError(where, "more than " + std::to_string(kMaxSteps) + " steps");
    if (type == "NFC") return steps.push_back({bpe::NormalizerStep::Kind::Nfc, "", ""});
    if (type == "Prepend") return steps.push_back({bpe::NormalizerStep::Kind::Prepend, string(n, "prepend", where), ""});
    if (type == "Replace") {
        const json* pattern = member(n, "pattern");
        if (!pattern || !pattern->is_object() || !member(*pattern, "String"))
            notRead(where + ".pattern", pattern ? *pattern : json(), "only {\"String\": …} is");
        const std::string& from = string(*pattern, "String", where + ".pattern");
        if (from.empty()) throw InputError(where + ".pattern.String", "the empty string");
        return steps.push_back({bpe::NormalizerStep::Kind::Replace, from, string(n, "content", where)});
    }
    notRead(where + ".type", json(type), "Sequence, NFC, Prepend and Replace are");
}

// A Split's pattern for PCRE2: {"Regex": …} in PCRE2's syntax, {"String": …} quoted.
std::shared_ptr<const bpe::Pattern> splitPattern(const json& split, const std::string& where) {
    using Behavior = bpe::Pattern::Behavior;
    Behavior behavior = Behavior::Isolated;
    if (const json* b = member(split, "behavior")) {
        if (*b == "MergedWithPrevious") behavior = Behavior::MergedWithPrevious;
        else if (*b == "MergedWithNext") behavior = Behavior::MergedWithNext;
        else if (*b != "Isolated") notRead(where + ".behavior", *b, "Isolated, MergedWithPrevious and MergedWithNext are");
    }
    requireField(split, "invert", json(false), where);
    const json* pattern = member(split, "pattern");
    if (!pattern || !pattern->is_object()) throw InputError(where + ".pattern", "expected {\"Regex\": …} or {\"String\": …}");
    std::string source;
    if (member(*pattern, "Regex")) {
        source = bpe::pcre2Syntax(string(*pattern, "Regex", where + ".pattern"));
    } else {
        for (const char c : string(*pattern, "String", where + ".pattern")) {
            if (std::isalnum(static_cast<unsigned char>(c)) == 0 && static_cast<unsigned char>(c) < 0x80) source += '\\';
            source += c;
        }
    }
    if (source.size() > kMaxPatternBytes)
        throw InputError(where + ".pattern", "longer than " + std::to_string(kMaxPatternBytes) + " bytes");
    try {
        return std::make_shared<const bpe::Pattern>(source, where + ".pattern", behavior);
    } catch (const std::invalid_argument& e) {
        throw InputError(where + ".pattern", std::string("does not compile under PCRE2: ") + e.what());
    }
}

// pre_tokenizer: Split patterns then ByteLevel (GPT-2's pattern with use_regex), or Metaspace
// alone. Returns whether ByteLevel is there (the symbols are bytes).
bool readPreTokenizer(const json& p, const std::string& where, ByteBpe::Impl& impl, bool last) {
    const std::string& type = typeOf(p, where);
    if (type == "Sequence") {
        const json* steps = member(p, "pretokenizers");
        const std::size_t n = steps && steps->is_array() ? steps->size() : 0;
        bool bytes = false;
        std::size_t i = 0;
        eachStep(p, "pretokenizers", where, [&](const json& s, const std::string& w) {
            if (bytes) notRead(w, s, "nothing is read after ByteLevel");
            bytes = readPreTokenizer(s, w, impl, last && ++i == n);
        });
        return bytes;
    }
    if (impl.splits.size() >= kMaxSteps) throw InputError(where, "more than " + std::to_string(kMaxSteps) + " steps");
    if (type == "Split") return impl.splits.push_back(splitPattern(p, where)), false;
    if (type == "ByteLevel") {
        requireField(p, "add_prefix_space", json(false), where);
        if (flag(p, "use_regex", true, where)) impl.splits.push_back(bpe::gpt2Pattern());
        return true;
    }
    if (type == "Metaspace") {
        if (!last || !impl.splits.empty()) notRead(where + ".type", json(type), "Metaspace is read alone, not in a Sequence");
        bpe::Metaspace m;
        m.replacement = string(p, "replacement", where);
        if (m.replacement.empty()) throw InputError(where + ".replacement", "the empty string");
        m.split = flag(p, "split", true, where);
        if (const json* scheme = member(p, "prepend_scheme")) {
            if (*scheme == "always") m.prepend = bpe::Metaspace::Prepend::Always;
            else if (*scheme == "first") m.prepend = bpe::Metaspace::Prepend::First;
            else if (*scheme == "never") m.prepend = bpe::Metaspace::Prepend::Never;
            else notRead(where + ".prepend_scheme", *scheme, "\"always\", \"first\" and \"never\" are");
        } else if (!flag(p, "add_prefix_space", true, where)) {
            m.prepend = bpe::Metaspace::Prepend::Never;  // the older form of the field
        }
        impl.metaspace = std::move(m);
        return false;
    }
    notRead(where + ".type", json(type), "Sequence, Split, ByteLevel and Metaspace are");
}

// A RobertaProcessing's token: ["</s>", 2], its id checked against the vocabulary's.
int robertaToken(const json& p, const char* key, const std::string& where, const ByteBpe::Impl& impl) {
    const json* token = member(p, key);
    const std::string w = where + "." + key;
    if (!token || !token->is_array() || token->size() != 2 || !(*token)[0].is_string()) throw InputError(w, "expected [\"token\", id]");
    const long long id = integerId((*token)[1], w);
    if (id >= static_cast<long long>(impl.texts.size()) || impl.texts[static_cast<std::size_t>(id)].empty())
        throw InputError(w, "the id " + std::to_string(id) + " is no token");
    return static_cast<int>(id);
}

// post_processor: ByteLevel (adds nothing), TemplateProcessing (the tokens around a single text),
// RobertaProcessing (<s> A </s>, and <s> A </s></s> B </s> for a pair), and Sequences of them.
void readPostProcessor(const json& p, const std::string& where, ByteBpe::Impl& impl, bool& template_) {
    const std::string& type = typeOf(p, where);
    if (type == "Sequence")
        return eachStep(p, "processors", where, [&](const json& s, const std::string& w) { readPostProcessor(s, w, impl, template_); });
    if (type == "ByteLevel") return;
    if (type != "TemplateProcessing" && type != "RobertaProcessing")
        notRead(where + ".type", json(type), "Sequence, ByteLevel, TemplateProcessing and RobertaProcessing are");
    if (template_) notRead(where + ".type", json(type), "one template is read, not two");
    template_ = true;
    if (type == "RobertaProcessing") {
        // trim_offsets and add_prefix_space change the offsets only, not the ids.
        const int cls = robertaToken(p, "cls", where, impl), sep = robertaToken(p, "sep", where, impl);
        impl.prefix = {cls};
        impl.suffix = {sep};
        impl.pairTemplate = true;
        impl.pairPrefix = {sep};
        return;
    }
    const json* specials = member(p, "special_tokens");
    // A template's tokens around its sequences: [0] before $A, [1] after it, [2] after $B.
    const auto pieces = [&](const char* key, bool pair) {
        const json* list = member(p, key);
        const std::string at = where + "." + key;
        if (!list || !list->is_array() || list->size() > kMaxSteps)
            throw InputError(at, "expected a list of at most " + std::to_string(kMaxSteps) + " pieces");
        std::vector<std::vector<int>> parts(1);
        for (std::size_t i = 0; i < list->size(); ++i) {
            const std::string w = at + "[" + std::to_string(i) + "]";
            const json& piece = (*list)[i];
            if (piece.is_object() && member(piece, "Sequence")) {
                const json id = piece["Sequence"].value("id", json());
                const char* next = parts.size() == 1 ? "A" : "B";
                if (parts.size() > (pair ? 2u : 1u) || id != next)
                    notRead(w + ".Sequence", piece["Sequence"], pair ? "\"A\" then \"B\" are" : "one sequence \"A\" is");
                parts.emplace_back();
                continue;
            }
            if (!piece.is_object() || !member(piece, "SpecialToken") || !piece["SpecialToken"].is_object())
                notRead(w, piece, "{\"SpecialToken\": …} and {\"Sequence\": …} are");
            const std::string& name = string(piece["SpecialToken"], "id", w + ".SpecialToken");
            const json* token = specials && specials->is_object() ? member(*specials, name.c_str()) : nullptr;
            const json* ids = token && token->is_object() ? member(*token, "ids") : nullptr;
            if (!ids || !ids->is_array() || ids->size() > kMaxSteps)
                throw InputError(where + ".special_tokens", "no list of ids for " + shown(name));
            for (const json& id : *ids) {
                const long long n = integerId(id, where + ".special_tokens: " + shown(name));
                if (n >= static_cast<long long>(impl.texts.size()) || impl.texts[n].empty())
                    throw InputError(where + ".special_tokens: " + shown(name), "the id " + std::to_string(n) + " is no token");
                parts.back().push_back(static_cast<int>(n));
            }
        }
        if (parts.size() != (pair ? 3u : 2u))
            throw InputError(at, pair ? "expected {\"Sequence\": {\"id\": \"A\"}} and {\"Sequence\": {\"id\": \"B\"}}"
                                      : "no {\"Sequence\": {\"id\": \"A\"}}: where the text goes");
        return parts;
    };
    const std::vector<std::vector<int>> single = pieces("single", false);
    impl.prefix = single[0];
    impl.suffix = single[1];
    // The pair's form, when it is prefix A suffix … B suffix (BERT-like: [CLS] A [SEP] B [SEP]); a
    // pair of another form is not read, and only a sentence pair asked for is refused (encodePair).
    if (!member(p, "pair")) return;
    try {
        const std::vector<std::vector<int>> pair = pieces("pair", true);
        const std::vector<int>& between = pair[1];
        if (pair[0] != impl.prefix || pair[2] != impl.suffix || between.size() < impl.suffix.size() ||
            !std::equal(impl.suffix.begin(), impl.suffix.end(), between.begin()))
            return;
        impl.pairTemplate = true;
        impl.pairPrefix.assign(between.begin() + static_cast<std::ptrdiff_t>(impl.suffix.size()), between.end());
    } catch (const InputError&) {
        impl.pairTemplate = false;
    }
}

}  // namespace

ByteBpe ByteBpe::fromTokenizerJson(const std::string& path) { return fromTokenizerJsonText(bpe::readTokenizerFile(path), path); }

ByteBpe ByteBpe::fromTokenizerJsonText(std::string_view text, const std::string& name) {
    const json j = bpe::tokenizerObject(text, name);
    // 1. the model: BPE, with what HF's BPE reads that changes the ids
    const json* model = member(j, "model");
    if (!model || !model->is_object()) throw InputError(name + ": model", "expected an object with \"vocab\" and \"merges\"");
    const json* type = member(*model, "type");
    if (!type || *type != "BPE") {
        if (!type) throw InputError(name + ": model.type", "expected \"BPE\", got nothing");
        notRead(name + ": model.type", *type, "only \"BPE\" is");
    }
    if (const json* dropout = member(*model, "dropout"); dropout && *dropout != json(0) && *dropout != json(0.0))
        notRead(name + ": model.dropout", *dropout, "dropout makes the ids random; only null or 0 is");
    requireField(*model, "continuing_subword_prefix", json(""), name + ": model");
    requireField(*model, "end_of_word_suffix", json(""), name + ": model");
    for (const char* key : {"truncation", "padding"})
        if (const json* v = member(j, key)) notRead(name + ": " + key, *v, "only null is");

    Builder builder(name + ": model.vocab", "model.vocab");
    ByteBpe::Impl& impl = builder.impl();
    impl.ignoreMerges = flag(*model, "ignore_merges", false, name + ": model");
    const bool byteFallback = flag(*model, "byte_fallback", false, name + ": model");
    impl.fuseUnk = flag(*model, "fuse_unk", false, name + ": model");

    // 2. the normalizer and the pre-tokenizer: bytes with ByteLevel, else characters
    if (const json* n = member(j, "normalizer")) readNormalizer(*n, name + ": normalizer", impl.normalizer);
    const json* pre = member(j, "pre_tokenizer");
    const bool bytes = pre && readPreTokenizer(*pre, name + ": pre_tokenizer", impl, true);
    impl.symbols = bytes ? bpe::Symbols::Bytes : bpe::Symbols::Characters;
    if (bytes && byteFallback) notRead(name + ": model.byte_fallback", json(true), "not with ByteLevel, whose bytes are all tokens");
    if (impl.metaspace) impl.space = impl.metaspace->replacement;
    for (const auto& step : impl.normalizer)
        if (step.kind == bpe::NormalizerStep::Kind::Replace && step.text == " ") impl.space = step.by;

    // 3. the vocabulary and the added tokens (an added token already in it must keep its id)
    const json* vocab = member(*model, "vocab");
    if (!vocab || !vocab->is_object()) throw InputError(name + ": model.vocab", "expected an object of \"token\": id entries");
    impl.ids.reserve(vocab->size());
    for (const auto& [token, id] : vocab->items())
        builder.addToken(token, integerId(id, name + ": model.vocab: token " + shown(token)), name + ": model.vocab");
    std::vector<std::tuple<bpe::AddedToken, bool, std::string>> added;  // token, special, where
    bpe::eachAddedToken(j, name, [&](const json& t, const std::string& content, long long id, const std::string& where) {
        bpe::AddedToken a{content, 0, flag(t, "lstrip", false, where), flag(t, "rstrip", false, where),
                          flag(t, "single_word", false, where)};
        const bool special = flag(t, "special", false, where);
        if (flag(t, "normalized", false, where) && !impl.normalizer.empty())
            notRead(where + ".normalized", json(true),
                    "an added token is matched in the text as written; with a normalizer, "
                    "only false is");
        const auto known = impl.ids.find(a.text);
        if (known == impl.ids.end()) builder.addToken(a.text, id, where);
        else if (known->second != id)
            throw InputError(where, "token " + shown(a.text) + " has the id " + std::to_string(known->second) + " in model.vocab, not " +
                                        std::to_string(id));
        a.id = static_cast<int>(id);
        added.emplace_back(std::move(a), special, where);
    });
    builder.finishVocabulary(byteFallback);

    // 4. the merges: "left right" strings, or [left, right] pairs (whose symbols may hold spaces)
    const json* merges = member(*model, "merges");
    if (!merges || !merges->is_array()) throw InputError(name + ": model.merges", "expected a list of merges");
    impl.merges.reserve(merges->size());
    // a merge's place, made for a message only (Gemma 3 has 514,906 merges)
    const std::string mergesWhere = name + ": model.merges";
    for (std::size_t i = 0; i < merges->size(); ++i) {
        const auto where = [&] { return mergesWhere + "[" + std::to_string(i) + "]"; };
        const json& m = (*merges)[i];
        try {
            if (m.is_string()) {
                const std::string& s = m.get_ref<const std::string&>();
                const std::size_t space = s.find(' ');
                if (space == 0 || space == std::string::npos || space + 1 == s.size() || s.find(' ', space + 1) != std::string::npos)
                    throw InputError(where(), "expected two symbols separated by one space, got " + shown(s));
                builder.addMerge(std::string_view(s).substr(0, space), std::string_view(s).substr(space + 1), mergesWhere);
            } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
                builder.addMerge(m[0].get_ref<const std::string&>(), m[1].get_ref<const std::string&>(), mergesWhere);
            } else {
                throw InputError(where(), "expected \"left right\" or [\"left\", \"right\"], got " + describeJson(m));
            }
        } catch (const InputError& e) {
            if (e.where() != mergesWhere) throw;
            throw InputError(where(), e.what());  // the merge's own problem, at its index
        }
    }
    for (const auto& [token, special, where] : added) builder.addAdded(token, special, where);

    // 5. the unknown token, the post-processor's tokens
    if (const json* unk = member(*model, "unk_token"); unk && !bytes) {
        const std::string& u = string(*model, "unk_token", name + ": model");
        const auto it = impl.ids.find(u);
        if (it == impl.ids.end()) throw InputError(name + ": model.unk_token", shown(u) + " is not in model.vocab");
        impl.unkId = it->second;
    }
    bool template_ = false;
    if (const json* post = member(j, "post_processor")) readPostProcessor(*post, name + ": post_processor", impl, template_);
    return ByteBpe(builder.finish());
}

}  // namespace attnviz::core
