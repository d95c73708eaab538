// libFuzzer target: BERT's WordPiece (core/text/wordpiece.hpp). The input is a vocab.txt and a
// text, split at the first NUL byte (the vocabulary first; no NUL: all of it the text over a small
// fixed vocabulary). The vocabulary is read or refused with an InputError; what is read encodes the
// text (as one sentence and as a pair with itself), and:
//   * every id is in the vocabulary; the one sentence is [CLS], the text's words, [SEP], all of
//     type 0; the pair is the sentence, the words again, [SEP], the second part of type 1;
//   * the normalized text and every pre-token are valid UTF-8, and no pre-token is empty;
//   * the same vocabulary written as a tokenizer.json (BertNormalizer, BertPreTokenizer,
//     BertProcessing, the specials as added tokens; when no token is given twice) reads and
//     encodes the text to the same ids and token types;
//   * the time (the thread's CPU time) stays within a budget linear in the text and the
//     vocabulary: 0.25 s plus 20 µs a byte; a word matched by trying every substring, or the
//     specials searched from the start again after each match, would be quadratic.
#include "core/base/error.hpp"
#include "core/text/wordpiece.hpp"
#include "fuzz/check.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace attnviz::core;
using attnviz::fuzz::check;
using attnviz::fuzz::cpuSeconds;
using attnviz::fuzz::isValidUtf8;

constexpr std::string_view kFixedVocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n##s\na\n##a\n##b\nab\n中\n,\n";

// The vocabulary `w` read from vocab.txt, as a tokenizer.json; nothing when a token is given twice
// (vocab.txt's later id wins, which a tokenizer.json's vocab cannot say).
std::optional<std::string> asTokenizerJson(const WordPiece& w, const WordPieceOptions& options) {
    nlohmann::json vocab = nlohmann::json::object();
    for (int id = 0; id < w.vocabSize(); ++id) {
        if (w.idOf(w.token(id)) != std::optional<int>(id)) return std::nullopt;
        vocab[w.token(id)] = id;
    }
    nlohmann::json added = nlohmann::json::array();
    for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
        if (const std::optional<int> id = w.idOf(special)) added.push_back({{"id", *id}, {"content", special}, {"special", true}});
    const nlohmann::json j = {
        {"added_tokens", added},
        {"normalizer", {{"type", "BertNormalizer"}, {"lowercase", options.lowercase}, {"strip_accents", nullptr}}},
        {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
        {"post_processor", {{"type", "BertProcessing"}, {"cls", {"[CLS]", w.clsId()}}, {"sep", {"[SEP]", w.sepId()}}}},
        {"model", {{"type", "WordPiece"}, {"max_input_chars_per_word", options.maxInputCharsPerWord}, {"vocab", vocab}}}};
    return j.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::size_t nul = input.find('\0');
    const std::string_view vocabText = nul == std::string_view::npos ? kFixedVocab : input.substr(0, nul);
    const std::string_view text = nul == std::string_view::npos ? input : input.substr(nul + 1);
    double start = cpuSeconds();
    std::optional<WordPiece> w;
    WordPieceOptions options;
    options.lowercase = size % 2 == 0;
    options.maxInputCharsPerWord = 1 + static_cast<int>(size % 200);
    try {
        w.emplace(WordPiece::fromVocabText(vocabText, "vocab.txt", options));
    } catch (const InputError&) {
        return 0;
    }
    const std::vector<int> words = w->words(text);
    for (const int id : words) check(w->hasId(id), "an id outside the vocabulary");
    const WordPiece::Encoding one = w->encode(text);
    std::vector<int> want{w->clsId()};
    want.insert(want.end(), words.begin(), words.end());
    want.push_back(w->sepId());
    check(one.ids == want, "the sentence is not [CLS] words [SEP]");
    check(one.typeIds == std::vector<int>(want.size(), 0), "a sentence's token types are not all 0");
    const WordPiece::Encoding pair = w->encode(text, text);
    std::vector<int> wantPair = want;
    wantPair.insert(wantPair.end(), words.begin(), words.end());
    wantPair.push_back(w->sepId());
    check(pair.ids == wantPair, "the pair is not [CLS] A [SEP] B [SEP]");
    std::vector<int> types(want.size(), 0);
    types.resize(wantPair.size(), 1);
    check(pair.typeIds == types, "the pair's token types are not 0 … 0 1 … 1");
    check(isValidUtf8(w->normalize(text)), "the normalized text is not valid UTF-8");
    for (const std::string& t : w->preTokens(text)) check(!t.empty() && isValidUtf8(t), "an empty or invalid pre-token");
    if (const std::optional<std::string> json = asTokenizerJson(*w, options)) {
        const double before = cpuSeconds();
        const WordPiece fromJson = WordPiece::fromTokenizerJsonText(*json, "tokenizer.json");
        const WordPiece::Encoding again = fromJson.encode(text, text);
        check(again.ids == pair.ids && again.typeIds == pair.typeIds, "the tokenizer.json of the vocabulary encodes otherwise");
        start += cpuSeconds() - before;  // the JSON's writing and reading are not the tokenizer's time
    }
    const double seconds = cpuSeconds() - start;
    check(seconds <= 0.25 + 20e-6 * static_cast<double>(size), "over the linear time budget", std::to_string(seconds) + " s");
    return 0;
}
