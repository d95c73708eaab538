// A test helper for tests/oracle/test_gpt2_tokenizer.py and test_tokenizer_json.py: a byte-pair
// encoding over a file of texts, so that a script can hold its ids against independent encoders.
// Usage: attnviz_bpe_encode VOCAB.json MERGES.txt TEXTS
//        attnviz_bpe_encode --tokenizer-json TOKENIZER.json [--decoded] TEXTS
//        attnviz_bpe_encode --wordpiece VOCAB.txt|TOKENIZER.json [--cased] TEXTS   (BERT's WordPiece:
//            [CLS] A [SEP]; a text holding a TAB is a pair A TAB B; --cased: vocab.txt only)
// TEXTS holds UTF-8 texts separated by NUL bytes (a NUL after the last is optional). Prints one
// line a text: its token ids separated by spaces. Exits 1, naming the text, when a text does not
// decode back to its bytes (the ids after the post-processor's first token, bosId()), and 2 with
// one line on stderr when a file cannot be loaded. With --decoded, where a normalizer changes the
// text, the decoding is printed instead of checked: a second line a text, its bytes in hex.
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/text/byte_bpe.hpp"
#include "core/text/wordpiece.hpp"

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Runs `load` (a tokenizer's constructor) and reads TEXTS, NUL-separated (a NUL after the last is
// optional), into `storage` and its `texts`; false, after one line on stderr, on an InputError.
template <class Load>
bool loadWithTexts(Load&& load, const char* path, std::string& storage, std::vector<std::string_view>& texts) {
    try {
        load();
        storage = attnviz::core::readTextFile(path);
    } catch (const attnviz::core::InputError& e) {
        std::fprintf(stderr, "attnviz_bpe_encode: %s\n", e.message().c_str());
        return false;
    }
    if (!storage.empty() && storage.back() == '\0') storage.pop_back();
    for (std::size_t at = 0; at <= storage.size();) {
        std::size_t end = storage.find('\0', at);
        if (end == std::string::npos) end = storage.size();
        texts.push_back(std::string_view(storage).substr(at, end - at));
        at = end + 1;
    }
    return true;
}

// --wordpiece: one line of ids a text, and a second of its token types.
int wordPiece(int argc, char** argv) {
    using attnviz::core::WordPiece;
    const bool cased = argc == 5 && std::string_view(argv[3]) == "--cased";
    if (argc != 4 && !cased) {
        std::fprintf(stderr, "usage: %s --wordpiece VOCAB.txt|TOKENIZER.json [--cased] TEXTS\n", argv[0]);
        return 2;
    }
    attnviz::core::WordPieceOptions options;
    options.lowercase = !cased;
    std::optional<WordPiece> tokenizer;
    std::string storage;
    std::vector<std::string_view> texts;
    const bool loaded = loadWithTexts(
        [&] {
            const std::string_view file = argv[2];
            const bool json = file.size() >= 5 && file.substr(file.size() - 5) == ".json";
            tokenizer.emplace(json ? WordPiece::fromTokenizerJson(argv[2]) : WordPiece::fromVocabTxt(argv[2], options));
        },
        argv[argc - 1], storage, texts);
    if (!loaded) return 2;
    std::string out;
    for (const std::string_view text : texts) {
        const std::size_t tab = text.find('\t');
        const WordPiece::Encoding e =
            tab == std::string_view::npos ? tokenizer->encode(text) : tokenizer->encode(text.substr(0, tab), text.substr(tab + 1));
        for (std::size_t i = 0; i < e.ids.size(); ++i) out += (i ? " " : "") + std::to_string(e.ids[i]);
        out += '\n';
        for (std::size_t i = 0; i < e.typeIds.size(); ++i) out += (i ? " " : "") + std::to_string(e.typeIds[i]);
        out += '\n';
    }
    std::cout << out;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    using attnviz::core::ByteBpe;
    if (argc >= 2 && std::string_view(argv[1]) == "--wordpiece") return wordPiece(argc, argv);
    const bool tokenizerJson = argc >= 4 && std::string_view(argv[1]) == "--tokenizer-json";
    const bool decoded = tokenizerJson && argc == 5 && std::string_view(argv[3]) == "--decoded";
    if (argc != 4 && !decoded) {
        std::fprintf(stderr, "usage: %s VOCAB.json MERGES.txt TEXTS | --tokenizer-json TOKENIZER.json [--decoded] TEXTS\n", argv[0]);
        return 2;
    }
    std::optional<ByteBpe> bpe;
    std::string storage;
    std::vector<std::string_view> texts;
    if (!loadWithTexts([&] { bpe.emplace(tokenizerJson ? ByteBpe::fromTokenizerJson(argv[2]) : ByteBpe::fromFiles(argv[1], argv[2])); },
                       argv[argc - 1], storage, texts))
        return 2;
    std::string out;
    for (std::size_t number = 0; number < texts.size(); ++number) {
        const std::string_view text = texts[number];
        const std::vector<int> ids = bpe->encode(text);
        std::vector<int> body = ids;
        if (const auto bos = bpe->bosId(); bos && !body.empty() && body.front() == *bos) body.erase(body.begin());
        const std::string back = bpe->decode(body);
        if (!decoded && back != text) {
            std::fprintf(stderr, "attnviz_bpe_encode: text %zu does not decode back to its bytes\n", number);
            return 1;
        }
        for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
        out += '\n';
        if (decoded) {
            static constexpr char kHex[] = "0123456789abcdef";
            for (const char c : back) out += kHex[static_cast<unsigned char>(c) >> 4], out += kHex[static_cast<unsigned char>(c) & 15];
            out += '\n';
        }
    }
    std::cout << out;
    return 0;
}
