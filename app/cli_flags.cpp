// The flags: declared, checked, and read into a request (a scenario and a view).
#include "app/cli_flags.hpp"

#include "app/state/actions.hpp"
#include "app/state/model_test_job.hpp"
#include "app/views/view_table.hpp"
#include "core/base/error.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/presets.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>

namespace attnviz::app::cli {
namespace {

// "a,b,c" -> {a, b, c}. Read as one value and split here: an empty or blank item is a mistake
// (`--tokens ,` or a trailing comma), never a token and never a reason to read the next argument.
std::vector<std::string> splitTokens(const std::string& text) {
    std::vector<std::string> tokens;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item.find_first_not_of(" \t\r\n") == std::string::npos)
            throw core::InputError("--tokens",
                                   "token " + std::to_string(tokens.size() + 1) + " is empty (expected A,B,… with no empty item)");
        tokens.push_back(item);
        if (comma == std::string::npos) return tokens;
        start = comma + 1;
    }
}

// A whole number in [lo, hi], digits only and read whole: past the range is an error, never
// wrapped or saturated into another number.
long long parseWhole(const char* flag, const std::string& text, long long lo, long long hi) {
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi)
        throw core::InputError(
            flag, "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + core::quoteValue(text));
    return value;
}

// "WxH" with both in range; digits only, so "4294967496x150" is too large, not 200x150.
std::pair<int, int> parseSize(const std::string& text) {
    const auto bad = [&] {
        return core::InputError("--size", "expected WIDTHxHEIGHT between 200x150 and 16384x16384, got " + core::quoteValue(text));
    };
    const std::size_t x = text.find_first_of("xX");
    if (x == std::string::npos) throw bad();
    const auto number = [&](std::string_view digits) {
        int value = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) throw bad();
        return value;
    };
    const std::string_view all(text);
    const int w = number(all.substr(0, x)), h = number(all.substr(x + 1));
    if (w < 200 || h < 150 || w > 16384 || h > 16384) throw bad();
    return {w, h};
}

std::pair<int, int> parseSwap(const std::string& text) {
    const auto comma = text.find(',');
    try {
        if (comma == std::string::npos) throw std::invalid_argument("no comma");
        std::size_t used1 = 0, used2 = 0;
        const std::string a = text.substr(0, comma), b = text.substr(comma + 1);
        const int i = std::stoi(a, &used1), j = std::stoi(b, &used2);
        if (used1 != a.size() || used2 != b.size() || i < 0 || j < 0) throw std::invalid_argument("bad");
        return {i, j};
    } catch (const std::exception&) {
        throw core::InputError("--swap", "expected two positions I,J (e.g. --swap 0,2), got " + core::quoteValue(text));
    }
}

void requirePositive(const CLI::Option* opt, long long value, const char* name) {
    if (opt->count() && value < 1) throw core::InputError(name, "must be at least 1, got " + std::to_string(value));
}

// A title from a text: valid UTF-8 on one line, at most 80 bytes (cut at a character, then "…").
std::string titleOf(const std::string& text) {
    std::string title = core::oneLine(core::sanitizeUtf8(text));
    if (title.size() <= 80) return title;
    std::size_t cut = 80;
    while (cut > 0 && (static_cast<unsigned char>(title[cut]) & 0xC0) == 0x80) --cut;
    return title.substr(0, cut) + "…";
}

// --ablate, --ablate-mean and --hide-token: a model's what-if edits (layers, heads and tokens from
// 0, as --layer, --head and --swap count). Each flag given replaces the scenario's edits of its kind.
void applyWhatIf(const Flags& f, const CLI::App& app, core::Scenario& s) {
    const auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
    for (const char* flag : {"--ablate", "--ablate-mean", "--hide-token"})
        if (given(flag) && !s.model) throw core::InputError(flag, "only with --model (a what-if edits a model's pass)");
    const auto heads = [&](const char* flag, const std::vector<std::string>& texts, bool mean) {
        std::erase_if(s.ablations, [&](const core::HeadAblation& a) { return a.mean == mean; });
        for (const std::string& text : texts) {
            const auto head = core::parseLayerHead(text);
            if (!head)
                throw core::InputError(flag,
                                       "expected a head as L.H (layer.head, counted from 0: --ablate 3.5), got " + core::quoteValue(text));
            s.ablations.push_back({head->first, head->second, mean});
        }
    };
    if (given("--ablate")) heads("--ablate", f.ablate, false);
    if (given("--ablate-mean")) heads("--ablate-mean", f.ablateMean, true);
    if (given("--hide-token")) {
        s.hiddenTokens.clear();
        for (const std::string& text : f.hideTokens)
            s.hiddenTokens.push_back(static_cast<int>(parseWhole("--hide-token", text, 0, std::numeric_limits<int>::max())));
    }
}

// Applies the flags that set the same things as the file; flags win.
void applyOverrides(const Flags& f, const CLI::App& app, core::Scenario& s) {
    const auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
    // A sentence of one's own names what is shown (not the preset it replaced); --title wins.
    if (given("--sentence")) s.sentence = f.sentence, s.tokens.reset(), s.name = titleOf(f.sentence);
    if (given("--tokens")) s.tokens = splitTokens(f.tokens), s.sentence.reset();
    if (given("--pair")) s.pair = f.pair;
    if (given("--tokenizer")) {
        if (f.tokenizer == "word") s.tokenizer = core::Tokenizer::Word;
        else if (f.tokenizer == "char") s.tokenizer = core::Tokenizer::Char;
        else throw core::InputError("--tokenizer", "expected word or char, got " + core::quoteValue(f.tokenizer));
    }
    requirePositive(app.get_option("--d-model"), f.dModel, "--d-model");
    requirePositive(app.get_option("--heads"), f.heads, "--heads");
    requirePositive(app.get_option("--d-k"), f.dk, "--d-k");
    requirePositive(app.get_option("--d-v"), f.dv, "--d-v");
    if (given("--d-model")) s.dModel = f.dModel;
    if (given("--heads")) s.heads = f.heads;
    if (given("--d-k")) s.dk = f.dk;
    if (given("--d-v")) s.dv = f.dv;
    if ((given("--d-model") || given("--heads")) && !given("--d-k") && s.dk && !s.q) s.dk.reset();
    // up to 2^63 - 1, the largest seed a scenario file holds
    if (given("--seed")) s.seed = static_cast<std::uint64_t>(parseWhole("--seed", f.seed, 0, std::numeric_limits<long long>::max()));
    if (given("--embedding")) {
        if (f.embedding == "random") s.embedding = core::EmbeddingKind::Random;
        else if (f.embedding == "onehot") s.embedding = core::EmbeddingKind::OneHot;
        else throw core::InputError("--embedding", "expected random or onehot, got " + core::quoteValue(f.embedding));
    }
    if (given("--positional")) {
        if (f.positional == "none") s.positional = core::Positional::None;
        else if (f.positional == "sinusoidal") s.positional = core::Positional::Sinusoidal;
        else if (f.positional == "rope") s.positional = core::Positional::Rope;
        else if (f.positional == "alibi") s.positional = core::Positional::Alibi;
        else throw core::InputError("--positional", "expected none, sinusoidal, rope or alibi, got " + core::quoteValue(f.positional));
    }
    if (given("--rope-base")) {
        if (s.positional != core::Positional::Rope) throw core::InputError("--rope-base", "only with --positional rope");
        const float base = parseFloat("--rope-base", f.ropeBase);
        if (base <= 1.0f) throw core::InputError("--rope-base", "must be greater than 1, got " + core::quoteValue(f.ropeBase));
        s.ropeBase = base;
    }
    requirePositive(app.get_option("--kv-heads"), f.kvHeads, "--kv-heads");
    requirePositive(app.get_option("--window"), f.window, "--window");
    if (given("--kv-heads")) s.kvHeads = f.kvHeads;
    if (given("--window")) s.window = f.window;
    if (given("--temperature")) {
        const float tau = parseFloat("--temperature", f.temperature);
        if (tau <= 0.0f) throw core::InputError("--temperature", "must be greater than 0, got " + core::quoteValue(f.temperature));
        s.temperature = tau;
    }
    if (given("--causal")) s.causal = f.causal;
    if (given("--unscaled")) s.scaled = !f.unscaled;
    requirePositive(app.get_option("--length"), f.length, "--length");
    if (given("--length")) s.length = f.length;
    if (given("--swap")) {
        s.swaps.clear();
        for (const auto& text : f.swaps) s.swaps.push_back(parseSwap(text));
    }
    if (given("--model")) {
        // The preset or file gives the sentence and the softmax settings; the checkpoint the rest.
        core::Scenario m;
        m.name = core::modelFolderName(f.model);
        m.model = core::modelFolder(f.model);
        m.sentence = s.sentence ? s.sentence : std::optional<std::string>(core::kDefaultSentence);
        m.causal = given("--causal") ? f.causal : true;  // the state takes the model's own unless given
        m.causalGiven = given("--causal");
        m.pair = s.pair;
        m.temperature = s.temperature;
        m.scaled = s.scaled;
        m.swaps = s.swaps;
        m.window = s.window;  // a mask on the layer shown, as a model scenario's "window" is
        s = std::move(m);
    }
    if (given("--attention")) {
        // Attention computed elsewhere: the file fixes the tokens and every weight.
        for (const char* flag :
             {"--sentence", "--pair", "--tokens", "--tokenizer", "--d-model", "--heads", "--d-k", "--d-v", "--seed", "--embedding",
              "--positional", "--length", "--kv-heads", "--rope-base", "--temperature", "--causal", "--unscaled", "--swap", "--window"})
            if (given(flag)) throw core::InputError(flag, "not with --attention: the imported maps are fixed");
        for (const char* flag : {"--compare", "--ablate", "--ablate-mean", "--hide-token", "--export-qk-map"})
            if (given(flag)) throw core::InputError(flag, "not with --attention: imported attention has no model behind it to run again");
        core::Scenario a;
        a.name = std::filesystem::path(f.attention).filename().string();
        a.attention = std::filesystem::absolute(f.attention).lexically_normal().string();
        if (given("--tokens-file")) a.tokensFile = std::filesystem::absolute(f.tokensFile).lexically_normal().string();
        s = std::move(a);
    }
    if (s.model) {
        for (const char* flag : {"--tokens", "--tokenizer", "--d-model", "--heads", "--d-k", "--d-v", "--seed", "--embedding",
                                 "--positional", "--length", "--kv-heads", "--rope-base"})
            if (given(flag)) throw core::InputError(flag, "not with a model: the checkpoint fixes the tokens, sizes and weights");
    }
    if (given("--pair") && !s.model)
        throw core::InputError("--pair", "only with --model (or a scenario naming one): an encoder reads a sentence pair");
    if (given("--layer")) {
        if (!s.model && !s.attention) throw core::InputError("--layer", "only with --model or --attention (or a scenario naming one)");
        s.layer = static_cast<int>(parseWhole("--layer", f.layer, 0, core::kMaxLayerIndex));
    }
    applyWhatIf(f, app, s);
    if (given("--title")) s.name = titleOf(f.title);
}

}  // namespace

// The model view's order and pooling from --model-view-sort, --model-view-rank and
// --model-view-pooling (a sorted view is tinted by its statistic).
ModelViewOptions modelViewOptions(const Flags& f) {
    ModelViewOptions options;
    if (f.modelViewPooling == "max") options.pooling = core::BlockPooling::Max;
    else if (f.modelViewPooling != "mean")
        throw core::InputError("--model-view-pooling", "expected mean or max, got " + core::quoteValue(f.modelViewPooling));
    const std::string& by = f.modelViewSort.empty() ? f.modelViewRank : f.modelViewSort;
    const char* flag = f.modelViewSort.empty() ? "--model-view-rank" : "--model-view-sort";
    if (by.empty()) return options;
    options.score = core::parseHeadScore(by, flag);
    if (options.score == core::HeadScore::InductionTest || options.score == core::HeadScore::RetrievalTest)
        throw core::InputError(flag, std::string("the ") + (options.score == core::HeadScore::InductionTest ? "induction" : "retrieval") +
                                         " test runs its own sequences (the window's head statistics); sort by one of the others");
    options.order = f.modelViewSort.empty() ? core::TileOrder::Ranked : core::TileOrder::WithinLayer;
    options.tint = true;
    return options;
}

core::RetrievalSettings retrievalSettings(const Flags& f, int longest) {
    // The comma-separated items of a list flag, at most kMaxRetrievalCells.
    const auto items = [](const char* flag, const std::string& text) {
        std::vector<std::string> out;
        std::size_t start = 0;
        for (;;) {
            const std::size_t comma = text.find(',', start);
            if (out.size() == static_cast<std::size_t>(core::kMaxRetrievalCells))
                throw core::InputError(flag, "expected at most " + std::to_string(core::kMaxRetrievalCells) + " items");
            out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
            if (comma == std::string::npos) return out;
            start = comma + 1;
        }
    };
    core::RetrievalSettings s;
    if (!f.retrievalSegment.empty())
        s.segment = static_cast<int>(parseWhole("--retrieval-segment", f.retrievalSegment, 2, core::kMaxRetrievalSegment));
    if (!f.retrievalDepths.empty()) {
        s.depths.clear();
        for (const std::string& item : items("--retrieval-depths", f.retrievalDepths)) {
            parseFloat("--retrieval-depths", item);  // a number: read again as a double, 0.1 exactly
            const double depth = std::strtod(item.c_str(), nullptr);
            if (!(depth >= 0 && depth <= 1))
                throw core::InputError("--retrieval-depths", "expected depths from 0 to 1, got " + core::quoteValue(item));
            s.depths.push_back(depth);
        }
    }
    if (f.retrievalLengths.empty()) return app::retrievalUpTo(s, longest);
    s.lengths.clear();
    for (const std::string& item : items("--retrieval-lengths", f.retrievalLengths)) {
        const auto length = static_cast<int>(parseWhole("--retrieval-lengths", item, 1, std::numeric_limits<int>::max()));
        if (length > longest)
            throw core::InputError("--retrieval-lengths", "a length of " + std::to_string(length) + " tokens is over " +
                                                              std::to_string(longest) +
                                                              ", the most the model's positions and --max-tokens allow");
        s.lengths.push_back(length);
    }
    return s;
}

float parseFloat(const char* flag, const std::string& text) {
    const char* begin = text.c_str();
    char* end = nullptr;
    errno = 0;
    const long double value = std::strtold(begin, &end);
    if (end == begin || end != begin + text.size() || std::isnan(value))
        throw core::InputError(flag, "expected a number, got " + core::quoteValue(text));
    // inf and past ±3.4e38 (strtold gives ±HUGE_VALL past its own range)
    if (std::fabs(value) > std::numeric_limits<float>::max())
        throw core::InputError(flag, "got " + core::quoteValue(text) + ", which is beyond the float range");
    const auto single = static_cast<float>(value);
    if ((value != 0.0L && single == 0.0f) || errno == ERANGE)  // below the smallest float, or below strtold's own range
        throw core::InputError(flag, "got " + core::quoteValue(text) + ", which is too close to 0 for a float");
    return single;
}

void defineFlags(CLI::App& app, Flags& f) {
    app.set_help_flag("-h,--help", "Print this help and exit");
    app.add_option("--scenario", f.scenarioPath, "Open a scenario file (JSON)")->type_name("FILE");
    app.add_option("--preset", f.preset, "Open a built-in preset (see --list-presets)")->type_name("NAME");
    app.add_flag("--list-presets", f.listPresets, "List the built-in presets and exit");
    app.add_option("--sentence", f.sentence, "Text to tokenize (replaces the scenario's tokens, and names what is shown)")
        ->type_name("TEXT");
    app.add_option("--pair", f.pair, "With --model of an encoder (BERT): a second sentence, read as [CLS] A [SEP] B [SEP]")
        ->type_name("TEXT");
    app.add_option("--title", f.title, "The title of the window and of exported figures (default: the scenario's name, or the --sentence)")
        ->type_name("TEXT");
    app.add_option("--tokens", f.tokens, "Explicit tokens, comma-separated (not with --sentence)")->type_name("A,B,...");
    app.add_option("--tokenizer", f.tokenizer, "word (punctuation split off) or char")->type_name("word|char");
    app.add_option("--d-model", f.dModel, "Embedding width d_model")->type_name("N");
    app.add_option("--heads", f.heads, "Number of heads h")->type_name("N");
    app.add_option("--d-k", f.dk, "Query/key width per head (default d_model / heads)")->type_name("N");
    app.add_option("--d-v", f.dv, "Value width per head (default d_k)")->type_name("N");
    app.add_option("--seed", f.seed, "Seed for embeddings and weights")->type_name("N");
    app.add_option("--embedding", f.embedding, "random or onehot")->type_name("random|onehot");
    app.add_option("--positional", f.positional, "none, sinusoidal (added to X), rope (rotary q and k) or alibi (distance bias)")
        ->type_name("none|sinusoidal|rope|alibi");
    app.add_option("--rope-base", f.ropeBase, "RoPE's base (default 10000)")->type_name("B");
    app.add_option("--kv-heads", f.kvHeads, "Key/value heads shared by the query heads (grouped-query; 1 = multi-query)")->type_name("N");
    app.add_option("--window", f.window, "Sliding window: query i reads keys j with |i - j| < W (i - W < j <= i with --causal)")
        ->type_name("W");
    app.add_option("--temperature", f.temperature, "Softmax temperature tau > 0 (logits / (sqrt(d_k) tau))")->type_name("TAU");
    app.add_flag("--causal,!--no-causal", f.causal, "Causal mask on (or off): query i reads keys j <= i");
    app.add_flag("--unscaled", f.unscaled, "Divide the scores by 1 instead of sqrt(d_k)");
    app.add_option("--length", f.length, "Repeat the tokens cyclically to N tokens (large-T demos and benchmarks)")->type_name("N");
    // One I,J per --swap, so that a FILE after it is not read as a swap.
    app.add_option(
           "--model", f.model,
           "Open a Hugging Face model folder (GPT-2, Llama, Mistral, Qwen2, Qwen3, or the encoders BERT, RoBERTa, DistilBERT, ModernBERT: config.json, model.safetensors or its shards, the tokenizer); the sentence is its input")
        ->type_name("DIR");
    app.add_option("--attention", f.attention,
                   "Open attention computed elsewhere: a .npy of [layers, heads, T_q, T_k], [heads, T, T] or [T, T] (float32 or "
                   "float16), or a safetensors file of layer.0, layer.1, … or attentions; tokens from tokens.txt beside it")
        ->type_name("FILE");
    app.add_option("--tokens-file", f.tokensFile, "With --attention: the tokens, one a line (default: tokens.txt beside the file)")
        ->type_name("FILE");
    app.add_option("--layer", f.layer, "With a model or --attention: the layer shown and exported as a heatmap or CSV (0 = first)")
        ->type_name("N");
    app.add_option("--swap", f.swaps, "Swap token positions I and J (repeatable, applied in order)")
        ->type_name("I,J")
        ->allow_extra_args(false);
    app.add_option("--ablate", f.ablate,
                   "With a model: zero head L.H's output before W_O (layers and heads from 0; repeatable): the window, --export and "
                   "--export-npy show the pass after, and the next tokens before and after")
        ->type_name("L.H")
        ->allow_extra_args(false);
    app.add_option("--ablate-mean", f.ablateMean,
                   "With a model: replace head L.H's output by its mean over the positions (repeatable), as --ablate")
        ->type_name("L.H")
        ->allow_extra_args(false);
    app.add_option("--hide-token", f.hideTokens,
                   "With a model: no query reads token I (from 0) in any layer (repeatable); a query left with no key reads nothing")
        ->type_name("I")
        ->allow_extra_args(false);
    app.add_option("--export", f.exportJson, "Compute without a window and write every matrix as JSON ('-' = stdout)")
        ->type_name("OUT.json");
    app.add_option("--export-npy", f.exportNpy, "Write the matrices as .npy files into DIR")->type_name("DIR");
    app.add_option("--export-csv", f.exportCsv, "Write one head's weights as CSV with token headers ('-' = stdout)")->type_name("OUT.csv");
    // Each view's figure, as the view table names it (app/views/view_table.cpp).
    for (const ViewInfo& view : viewTable())
        if (view.figure) app.add_option(view.figure.flag, f.figures[view.id], view.figure.help)->type_name(view.figure.types);
    app.add_option("--export-stats", f.exportStats,
                   "Write every head's statistics (entropy, distance, self, previous, first, duplicate, induction) without a window: "
                   ".csv (one row per head; '-' = stdout) or .json (with the sink share)")
        ->type_name("OUT.csv|OUT.json");
    app.add_flag("--induction-test", f.inductionTest,
                 "With --model and --export-stats or --screenshot: score every head on random tokens repeated twice (the induction test; "
                 "a screenshot waits for it)");
    app.add_flag("--retrieval-test", f.retrievalTest,
                 "With --model and --export-stats or --screenshot: score every head on a random segment placed at each depth of a "
                 "filler of random tokens and repeated at the end (the retrieval test; columns retrieval_test and retrieval_top1, "
                 "each head's depth x length grid in the JSON; a screenshot waits for it)");
    app.add_option("--retrieval-lengths", f.retrievalLengths,
                   "The retrieval test's lengths in tokens (default 1024,2048,4096,8192: those the model and --max-tokens allow)")
        ->type_name("L,...");
    app.add_option("--retrieval-depths", f.retrievalDepths,
                   "The retrieval test's depths of the first copy, 0 (start) to 1 (just before the repeat) (default 0,0.25,0.5,0.75,1)")
        ->type_name("D,...");
    app.add_option("--retrieval-segment", f.retrievalSegment, "The retrieval test's segment: tokens copied (default 16)")->type_name("N");
    app.add_option("--sink-epsilon", f.sinkEpsilon,
                   "With --export-stats: the sink share counts the heads whose mean weight on the first token exceeds E (0 < E < 1, "
                   "default 0.3)")
        ->type_name("E");
    app.add_option("--first-tokens", f.firstTokens,
                   "k of the head statistics' first_k: the mass on the first k tokens (attention sinks; default 4), in the window "
                   "and --export-stats")
        ->type_name("K");
    app.add_option("--target", f.target,
                   "Direct logit attribution's target (--export-attribution and the window's Attribution tab): a token (\"Mary\" "
                   "reads as \" Mary\", the word inside a sentence, where that is one token), #ID for a token id, or two joined by \"-\" "
                   "for their logit difference (\"Mary-John\"); default: the token the model ranks first at the position (--query, "
                   "default the last)")
        ->type_name("TOKEN|A-B");
    app.add_option("--lens-colour", f.lensColour,
                   "What colours the logit lens's cells (--export-logit-lens and the window's Lens tab): the top token's probability "
                   "(top, the default), or the probability or the rank (log scale) of --lens-target there")
        ->type_name("top|probability|rank");
    app.add_option("--lens-target", f.lensTarget,
                   "With --lens-colour probability|rank: the token the last layer ranks first at each position (final, the default) "
                   "or the next input token (next); the CSV and JSON's target follows it")
        ->type_name("final|next");
    app.add_option("--generate", f.generate,
                   "A model writes N tokens after the text (greedy: the most likely each time), each read through the incremental "
                   "pass; the window and every export then show the text with them (the JSON's generated_from marks the first)")
        ->type_name("N");
    app.add_option("--sample-seed", f.sampleSeed,
                   "With --generate: sample each token from softmax(logits / --sample-temperature) over the --top-k most likely, "
                   "draws from seed S (the same seed, the same tokens)")
        ->type_name("S");
    app.add_option("--top-k", f.topK, "With --sample-seed: sample among the K most likely tokens (default 0: every token)")->type_name("K");
    app.add_option("--sample-temperature", f.sampleTemperature, "With --sample-seed: the sampling temperature (default 1)")->type_name("T");
    app.add_flag("--skip-first-key", f.skipFirstKey,
                 "Leave the first key out of the head statistics and the mean views: each row's weights over keys j >= 1, renormalised");
    app.add_option("--model-view-sort", f.modelViewSort,
                   "The model view's order (the window's, and --export-model-view's): sort each layer's heads by a statistic, largest "
                   "first, and tint them by it: entropy, "
                   "entropy-share, distance, self, previous, next, first, first-k, duplicate, induction, separator, punctuation, "
                   "moved (with --compare), or attribution (a model's: each head's term of --target at --query)")
        ->type_name("STAT");
    app.add_option("--model-view-rank", f.modelViewRank,
                   "The model view's order (the window's, and --export-model-view's): rank every head by a statistic (as "
                   "--model-view-sort names them), largest first, labelled layer.head")
        ->type_name("STAT");
    app.add_option("--model-view-pooling", f.modelViewPooling,
                   "The model view's pooling (the window's, and --export-model-view's): each texel the mean (default) or the largest "
                   "weight of its block")
        ->type_name("mean|max");
    app.add_option("--cell-size", f.cellSize, "With --export-heatmap: pixels per cell (default: about 720 px for the matrix)")
        ->type_name("PX");
    app.add_option("--colormap", f.colormap, "viridis, magma, grayscale or cividis (colour-blind safe)")->type_name("NAME");
    app.add_option(
           "--colour-scale", f.colourScale,
           "How weights become colours, in the window, --export-heatmap and --export-heads (--export-bars: log for a log axis): auto (stretched when every weight is far "
           "below 1; a long map to its 99th percentile when that is at least 1/T, the share above it clipped), fixed (0 … 1), stretch, rows (each row over its largest) or log")
        ->type_name("NAME");
    app.add_option(
           "--pair-filter", f.pairFilter,
           "With --pair: the block of the sentence pair the views, --export-heatmap and --export-head-view show: all, A-A, A-B (A's queries reading "
           "B's keys), B-A or B-B")
        ->type_name("all|A-A|A-B|B-A|B-B");
    app.add_flag("--rollout", f.rollout,
                 "Attention rollout up to --layer (a scenario: its one layer), each layer's heads fused with half the identity and "
                 "multiplied: in the window's heatmap and bars, in --export (a \"rollout\" object) and --export-npy (rollout.npy)");
    app.add_option("--rollout-heads", f.rolloutHeads, "With --rollout: fuse a layer's heads by their mean (default) or max")
        ->type_name("mean|max");
    app.add_option("--compare", f.compare,
                   "Another sentence for the same model or scenario: in the window's Compare tab (the head over both and their "
                   "difference where the tokens line up), --export-compare, and the model view's \"moved\" score")
        ->type_name("TEXT");
    app.add_option("--head", f.head,
                   "Head for --export-csv, --export-heatmap, --export-bars, --export-head-view and the window (-1 = mean over heads)")
        ->type_name("N");
    app.add_option("--max-tokens", f.maxTokens, "Refuse more tokens than this (default 32768)")->type_name("N");
    app.add_option("--max-memory", f.maxMemoryMiB, "Refuse a forward pass needing more MiB than this (default 12288)")->type_name("MIB");
    app.add_option("--keep-maps", f.keepMapsMiB,
                   "A model's pass keeps every map while they take at most this many MiB, else makes each on demand "
                   "(default 1024; 0: always on demand)")
        ->type_name("MIB");
    app.add_option("--screenshot", f.screenshot, "Open the window, render, save a PNG and exit (needs a display; xvfb-run works)")
        ->type_name("OUT.png");
    app.add_option("--panel", f.panel, "With --screenshot: only this panel")->type_name("NAME");
    app.add_option("--size", f.size, "Window size for the app and --screenshot")->type_name("WxH");
    app.add_option("--scale", f.scale, "With --screenshot: pixel density, 1 to 4 (2 = a 2x-resolution image)")->type_name("S");
    app.add_option("--ui-scale", f.uiScale, "UI scale (text and controls), 0.5 to 4")->type_name("S");
    app.add_option("--theme", f.theme, "dark, light or high-contrast")->type_name("NAME");
    app.add_flag("--presenter", f.presenter, "Start in presenter mode (large heatmap and labels, no controls)");
    app.add_option(
           "--lab", f.lab,
           "Show a lab panel in the bottom row: linear (linear attention, fast weights, Hopfield), cost, train or flash (the flash-attention walk)")
        ->type_name("NAME");
    app.add_option("--lesson", f.lesson, "Open a lesson: a shipped one by name (attention) or a lesson file (see docs/lessons.md)")
        ->type_name("NAME|FILE");
    app.add_option("--lesson-step", f.lessonStep, "With --lesson: open it at this step (0 = first)")->type_name("N");
    app.add_option("--query", f.query,
                   "The query (row) the window selects, --export-bars draws and --export-head-view isolates (0 = first)")
        ->type_name("N");
    app.add_option(
           "--stage", f.stage,
           "The stage the window's shape passport shows: 0 = X, 1 = Q, 2 = K, 3 = V, 4 = Q Kᵀ, 5 = scaled, 6 = masked, 7 = A, 8 = A V")
        ->type_name("N");
    app.add_flag("--small-multiples", f.smallMultiples, "Show every query's bars at once in the per-query panel");
    app.add_option("--zoom", f.zoom, "The window's heatmap zoomed in Z times, 1 to 512 (a long map's cells on screen made finer)")
        ->type_name("Z");
    app.add_option("--zoom-at", f.zoomAt, "With --zoom: the zoomed heatmap centred on query Q and key K (0 = first)")->type_name("Q,K");
    app.add_option("--train-steps", f.trainSteps, "Open the train lab and train for N steps (10 to 5000); --screenshot waits for the end")
        ->type_name("N");
    app.add_flag("--measure", f.measure, "Open the cost lab and time the sweep on this machine; --screenshot waits for the end");
    app.add_flag("--fresh", f.fresh, "Do not restore the last session");
    app.add_flag("--bench", f.bench, "Time the forward pass and the softmax on this machine; print one JSON line and exit");
    app.add_option("--bench-seconds", f.benchSeconds, "With --bench: seconds per measurement (default 2)")->type_name("S");
    app.add_flag("--version", f.version, "Print the version and exit");
    // What a file manager passes on a double-click (Exec=attnviz %f): the same as --scenario FILE.
    app.add_option("FILE", f.scenarioPath, "A scenario file to open (the same as --scenario FILE)")->type_name("");
}

void checkFlags(const Flags& f, const CLI::App& app) {
    const auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
    // An empty value (an unset variable in --export "$OUT") must not quietly mean "no export"
    // or "the default": every option that takes text refuses an empty one.
    for (const CLI::Option* opt : app.get_options()) {
        if (!opt->count() || opt->get_expected_min() == 0) continue;
        const bool path = opt->get_type_name().find("OUT") != std::string::npos || opt->get_type_name() == "FILE" ||
                          opt->get_type_name() == "DIR" || opt->get_name() == "FILE";
        for (const std::string& value : opt->results())
            if (value.empty())
                throw core::InputError(opt->get_name(), std::string("expected ") + (path ? "a path" : "a value") + ", got an empty one");
    }
    if (given("--scenario") && given("--preset")) throw core::InputError("--preset", "give either --scenario or --preset, not both");
    if (given("FILE") && given("--scenario"))
        throw core::InputError("--scenario", "give the scenario file once, as FILE or with --scenario, not both");
    if (given("FILE") && given("--preset")) throw core::InputError("--preset", "give either a scenario FILE or --preset, not both");
    if (given("--sentence") && given("--tokens")) throw core::InputError("--tokens", "give either --sentence or --tokens, not both");
    if (given("--attention")) {
        for (const char* name : {"--model", "--scenario", "--preset", "FILE"})
            if (given(name))
                throw core::InputError("--attention", std::string("give one input: --attention or ") +
                                                          (std::string(name) == "FILE" ? "a scenario FILE" : name) + ", not both");
        for (const auto& [test, name] : {std::pair{f.inductionTest, "--induction-test"}, std::pair{f.retrievalTest, "--retrieval-test"}})
            if (test) throw core::InputError(name, "runs a checkpoint on random tokens; imported attention has no model behind it");
        if (f.bench) throw core::InputError("--bench", "times a forward pass; imported attention has none to time");
        if (given("--export"))
            throw core::InputError("--export", "imported maps are written back by --export-npy (attentions.npy), not as JSON");
    } else if (given("--tokens-file")) {
        throw core::InputError("--tokens-file", "names the tokens of --attention's maps; give --attention FILE too");
    }
    const bool anyExport = exporting(f);
    if (given("--screenshot") && anyExport)
        throw core::InputError("--screenshot", "renders the window; it cannot be combined with --export* (run twice)");
    if (given("--rollout-heads") && !f.rollout) throw core::InputError("--rollout-heads", "needs --rollout");
    if (given("--export-compare") && !given("--compare"))
        throw core::InputError("--export-compare", "needs --compare TEXT (the other sentence)");
    if (given("--compare") && f.bench)
        throw core::InputError("--compare", "--bench times the forward pass only; it cannot be combined with --compare");
    for (const std::string* by : {&f.modelViewSort, &f.modelViewRank})
        if (*by == "moved" && !given("--compare"))
            throw core::InputError(by == &f.modelViewSort ? "--model-view-sort" : "--model-view-rank",
                                   "\"moved\" is how far each head moved against another sentence: give --compare TEXT");
    if (f.rollout && f.bench)
        throw core::InputError("--rollout", "--bench times the forward pass only; it cannot be combined with --rollout");
    if (f.rollout && anyExport && !given("--export") && !given("--export-npy"))
        throw core::InputError("--rollout", "is exported by --export (JSON) or --export-npy; the figures and the CSV show heads");
    if (f.bench && (anyExport || given("--screenshot")))
        throw core::InputError("--bench", "times the forward pass only; it cannot be combined with exports or --screenshot");
    for (const char* name : {"--induction-test", "--retrieval-test"})
        if (given(name) && !given("--export-stats") && !given("--screenshot"))
            throw core::InputError(name,
                                   "goes with --export-stats (the head statistics it writes) or --screenshot (the window runs it "
                                   "first); give one of them");
    if (given("--sink-epsilon") && !given("--export-stats"))
        throw core::InputError("--sink-epsilon", "goes with --export-stats (the head statistics it writes); give --export-stats OUT");
    for (const char* name : {"--retrieval-lengths", "--retrieval-depths", "--retrieval-segment"})
        if (given(name) && !f.retrievalTest) throw core::InputError(name, "sets the retrieval test; give --retrieval-test too");
    if (f.retrievalTest) retrievalSettings(f, std::numeric_limits<int>::max());  // each item a number, before any work
    if (given("--model-view-sort") && given("--model-view-rank"))
        throw core::InputError("--model-view-rank", "give either --model-view-sort or --model-view-rank, not both");
    static_cast<void>(modelViewOptions(f));  // a bad statistic or pooling before any work
}

bool exporting(const Flags& f) {
    return !f.exportJson.empty() || !f.exportNpy.empty() || !f.exportCsv.empty() || !f.exportStats.empty() ||
           std::any_of(f.figures.begin(), f.figures.end(), [](const auto& figure) { return !figure.second.empty(); });
}

GuiRequest requestFrom(const Flags& f, const CLI::App& app) {
    const auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
    GuiRequest request;
    if (given("--scenario") || given("FILE")) {
        request.scenario = core::loadScenarioFile(f.scenarioPath);
        request.scenarioPath = f.scenarioPath;
        request.source = f.scenarioPath;
    } else {
        request.presetId = given("--preset") ? f.preset : "default";
        request.scenario = core::loadPreset(request.presetId);
        request.source = "preset " + request.presetId;
    }
    applyOverrides(f, app, request.scenario);
    if (given("--attention")) {
        request.source = "--attention";  // the file's own errors name it
        request.presetId.clear();
    }
    if (given("--model")) {
        request.source = "--model";  // the checkpoint's own errors name its files
        request.presetId.clear();    // the preset gave the sentence; the model is what is shown
    }
    if (given("--max-tokens")) request.limits.maxTokens = parseWhole("--max-tokens", f.maxTokens, 1, 1LL << 40);
    if (given("--max-memory"))  // at most 1 PiB, so that the bytes fit in 64 bits
        request.limits.maxBytes = static_cast<std::uint64_t>(parseWhole("--max-memory", f.maxMemoryMiB, 1, 1LL << 30)) << 20;
    if (given("--keep-maps"))
        request.limits.keptMapsBytes = static_cast<std::uint64_t>(parseWhole("--keep-maps", f.keepMapsMiB, 0, 1LL << 30)) << 20;
    if (app.get_option("--head")->count()) request.head = f.head;
    if (given("--model-view-sort") || given("--model-view-rank") || given("--model-view-pooling"))
        request.modelView = modelViewOptions(f);  // the window's model view, and --export-model-view's
    request.screenshot = f.screenshot;
    request.panel = f.panel;
    request.fresh = f.fresh;
    if (app.get_option("--scale")->count()) {
        const float scale = parseFloat("--scale", f.scale);
        if (scale < 1.0f || scale > 4.0f)
            throw core::InputError("--scale", "expected a pixel scale from 1 to 4, got " + core::quoteValue(f.scale));
        request.scale = scale;
    }
    if (app.get_option("--ui-scale")->count()) {
        const float scale = parseFloat("--ui-scale", f.uiScale);
        if (scale < 0.5f || scale > 4.0f)
            throw core::InputError("--ui-scale", "expected a UI scale from 0.5 to 4, got " + core::quoteValue(f.uiScale));
        request.uiScale = scale;
    }
    if (!f.theme.empty() && f.theme != "dark" && f.theme != "light" && f.theme != "high-contrast")
        throw core::InputError("--theme", "expected dark, light or high-contrast, got " + core::quoteValue(f.theme));
    request.theme = f.theme;
    request.presenter = f.presenter;
    if (!labFromName(f.lab)) throw core::InputError("--lab", "expected " + labNameList() + ", got " + core::quoteValue(f.lab));
    request.lab = f.lab;
    if (!f.lesson.empty()) request.lesson = core::loadLesson(f.lesson);
    if (given("--lesson-step")) {
        if (!request.lesson) throw core::InputError("--lesson-step", "needs --lesson");
        const int steps = static_cast<int>(request.lesson->steps.size());
        if (f.lessonStep < 0 || f.lessonStep >= steps)
            throw core::InputError("--lesson-step", "expected 0 to " + std::to_string(steps - 1) + " (the lesson has " +
                                                        std::to_string(steps) + " steps), got " + std::to_string(f.lessonStep));
        request.lessonStep = f.lessonStep;
    }
    if (given("--query")) {
        if (f.query < 0) throw core::InputError("--query", "expected 0 or more, got " + std::to_string(f.query));
        request.query = f.query;  // checked against the sentence once it is tokenized
    }
    if (given("--stage")) {
        if (f.stage < 0 || f.stage >= kStageCount)
            throw core::InputError("--stage", "expected 0 to " + std::to_string(kStageCount - 1) + ", got " + std::to_string(f.stage));
        request.stage = f.stage;
    }
    request.smallMultiples = f.smallMultiples;
    request.skipFirstKey = f.skipFirstKey;
    if (given("--generate")) request.generate = static_cast<int>(parseWhole("--generate", f.generate, 1, 100000));
    for (const char* flag : {"--sample-seed", "--top-k", "--sample-temperature"})
        if (given(flag) && !given("--generate")) throw core::InputError(flag, "only with --generate");
    for (const char* flag : {"--top-k", "--sample-temperature"})
        if (given(flag) && !given("--sample-seed"))
            throw core::InputError(flag, "only with --sample-seed (generation is greedy without it)");
    if (given("--sample-seed")) {
        request.sampling.greedy = false;
        request.sampling.seed =
            static_cast<std::uint64_t>(parseWhole("--sample-seed", f.sampleSeed, 0, std::numeric_limits<long long>::max()));
    }
    if (given("--top-k")) request.sampling.topK = static_cast<int>(parseWhole("--top-k", f.topK, 0, 1000000));
    if (given("--sample-temperature")) {
        char* end = nullptr;
        const float t = std::strtof(f.sampleTemperature.c_str(), &end);
        if (f.sampleTemperature.empty() || *end != '\0' || !std::isfinite(t) || t <= 0.0f || t > 100.0f)
            throw core::InputError("--sample-temperature", "expected a number above 0 and at most 100");
        request.sampling.temperature = t;
    }
    if (given("--target")) {
        if (f.target.empty()) throw core::InputError("--target", "no token given");
        if (f.target.size() > 400)
            throw core::InputError("--target",
                                   "a target is one token or two joined by \"-\", not " + std::to_string(f.target.size()) + " bytes");
        request.target = f.target;
    }
    if (given("--lens-colour")) {
        if (f.lensColour == "top") request.lensColour = LensColour::Top;
        else if (f.lensColour == "probability") request.lensColour = LensColour::TargetProbability;
        else if (f.lensColour == "rank") request.lensColour = LensColour::TargetRank;
        else throw core::InputError("--lens-colour", "expected top, probability or rank, got " + core::quoteValue(f.lensColour));
    }
    if (given("--lens-target")) {
        if (f.lensTarget == "final") request.lensTarget = LensTarget::Final;
        else if (f.lensTarget == "next") request.lensTarget = LensTarget::NextInput;
        else throw core::InputError("--lens-target", "expected final or next, got " + core::quoteValue(f.lensTarget));
    }
    if (given("--first-tokens")) request.firstTokens = static_cast<int>(parseWhole("--first-tokens", f.firstTokens, 1, kMaxFirstTokens));
    if (given("--train-steps")) {
        if (f.trainSteps < 10 || f.trainSteps > 5000)
            throw core::InputError("--train-steps", "expected 10 to 5000, got " + std::to_string(f.trainSteps));
        if (!f.lab.empty() && f.lab != "train") throw core::InputError("--train-steps", "trains in the train lab, not --lab " + f.lab);
        request.trainSteps = f.trainSteps;
        request.lab = "train";
    }
    if (given("--zoom")) {
        const float zoom = parseFloat("--zoom", f.zoom);
        if (zoom < 1.0f || zoom > 512.0f)
            throw core::InputError("--zoom", "expected a zoom from 1 to 512, got " + core::quoteValue(f.zoom));
        request.zoom = zoom;
    }
    if (given("--zoom-at")) {
        if (!given("--zoom")) throw core::InputError("--zoom-at", "centres the zoomed heatmap; give --zoom Z too");
        const std::size_t comma = f.zoomAt.find(',');
        if (comma == std::string::npos)
            throw core::InputError("--zoom-at", "expected a query and a key, Q,K, got " + core::quoteValue(f.zoomAt));
        request.zoomAt = {parseWhole("--zoom-at", f.zoomAt.substr(0, comma), 0, 1LL << 40),
                          parseWhole("--zoom-at", f.zoomAt.substr(comma + 1), 0, 1LL << 40)};
    }
    request.inductionTest = f.inductionTest;
    if (f.retrievalTest) {
        request.retrieval = retrievalSettings(f, std::numeric_limits<int>::max());
        request.retrievalLengthsGiven = given("--retrieval-lengths");
    }
    if (f.measure) {
        if (given("--train-steps")) throw core::InputError("--measure", "one lab at a time: give --measure or --train-steps");
        if (!f.lab.empty() && f.lab != "cost") throw core::InputError("--measure", "measures in the cost lab, not --lab " + f.lab);
        request.measure = true;
        request.lab = "cost";
    }
    for (const char* name : {"--scenario", "FILE",       "--preset",    "--model",      "--attention",   "--layer",       "--sentence",
                             "--pair",     "--tokens",   "--tokenizer", "--d-model",    "--heads",       "--d-k",         "--length",
                             "--d-v",      "--seed",     "--embedding", "--positional", "--temperature", "--causal",      "--unscaled",
                             "--swap",     "--kv-heads", "--window",    "--rope-base",  "--ablate",      "--ablate-mean", "--hide-token"})
        if (app.get_option(name)->count()) request.explicitScenario = true;
    if (!f.size.empty()) std::tie(request.width, request.height) = parseSize(f.size);

    request.colormap = core::parseColormap(f.colormap, "--colormap");
    request.colormapGiven = app.get_option("--colormap")->count() > 0;
    request.colourScale = core::parseColourScale(f.colourScale, "--colour-scale");
    request.colourScaleGiven = app.get_option("--colour-scale")->count() > 0;
    if (app.get_option("--pair-filter")->count()) {
        static const std::pair<const char*, PairFilter> kFilters[] = {{"all", PairFilter::All},
                                                                      {"A-A", PairFilter::AtoA},
                                                                      {"A-B", PairFilter::AtoB},
                                                                      {"B-A", PairFilter::BtoA},
                                                                      {"B-B", PairFilter::BtoB}};
        const auto it =
            std::find_if(std::begin(kFilters), std::end(kFilters), [&](const auto& filter) { return f.pairFilter == filter.first; });
        if (it == std::end(kFilters))
            throw core::InputError("--pair-filter", core::quoteValue(f.pairFilter) + " is not one of all, A-A, A-B, B-A, B-B");
        if (!request.scenario.pair) throw core::InputError("--pair-filter", "needs a sentence pair: give --pair TEXT");
        request.pairFilter = it->second;
    }
    request.compareText = f.compare;
    request.rollout = f.rollout;
    request.rolloutHeads = core::parseRolloutHeads(f.rolloutHeads, "--rollout-heads");
    return request;
}

}  // namespace attnviz::app::cli
