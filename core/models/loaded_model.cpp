#include "core/models/loaded_model.hpp"

#include "core/attention/permutation.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/json_text.hpp"
#include "core/models/bert/bert.hpp"
#include "core/models/decoder/decoder_files.hpp"
#include "core/models/gemma/gemma.hpp"
#include "core/models/gpt2/gpt2.hpp"
#include "core/models/llama/llama.hpp"

#include <nlohmann/json.hpp>

#include <omp.h>
#include <algorithm>
#include <filesystem>

namespace attnviz::core {

namespace {

constexpr const char* kFamilies =
    "gpt2, llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3_text, gemma3, bert, roberta, distilbert, modernbert";

// config.json's model_type, checked to be one attnviz reads.
std::string modelType(const std::string& configPath) {
    const std::string text = decoder::readConfigText(configPath);
    const nlohmann::json j = parseJson(text, configPath, false);
    if (j.is_discarded()) throw InputError(configPath, "not valid JSON");
    if (!j.is_object()) throw InputError(configPath, "expected a JSON object, got " + describeJson(j));
    const auto type = j.find("model_type");
    if (type == j.end()) throw InputError(configPath, std::string("model_type: missing (expected one of ") + kFamilies + ")");
    std::string value = type->is_string() ? type->get<std::string>() : std::string();
    if (value != "gpt2" && !bert::readsModelType(value) && !llama::readsModelType(value) && !gemma::readsModelType(value))
        throw InputError(configPath + ": model_type", (type->is_string() ? quoteValue(value) : describeJson(*type)) +
                                                          " is not a model family attnviz reads (" + kFamilies + ")");
    return value;
}

}  // namespace

std::shared_ptr<const decoder::Checkpoint> openCheckpoint(const std::string& folder, Progress* progress) {
    const decoder::ModelFiles files = decoder::locateFiles(folder, "a Hugging Face model folder");
    const std::string type = modelType(files.config);
    if (type == "gpt2") return gpt2::open(folder, progress);
    if (bert::readsModelType(type)) return bert::open(folder, progress);
    if (gemma::readsModelType(type)) return gemma::open(folder, progress);
    return llama::open(folder, progress);
}

void checkModelFolder(const std::string& folder) { (void)decoder::locateFiles(folder, "a Hugging Face model folder"); }

std::string modelFolder(const std::string& path) {
    std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
    if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
    return p.string();
}

std::vector<std::string> modelInputFiles(const std::string& folder) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    std::error_code ec;
    const auto add = [&](const fs::path& p) {
        if (fs::is_regular_file(p, ec)) files.push_back(p.string());
    };
    for (const char* name : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                             "vocab.json", "merges.txt", "vocab.txt", "model.safetensors.index.json"})
        add(fs::path(folder) / name);
    constexpr int kMostListed = 100000;  // a folder of a million entries is not read to its end
    int listed = 0;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end && listed < kMostListed; it.increment(ec), ++listed)
        if (it->path().extension() == ".safetensors") add(it->path());
    return files;
}

std::string modelFolderName(const std::string& path) { return std::filesystem::path(modelFolder(path)).filename().string(); }

namespace {

// The fields a scenario naming a model may not set (the reader refuses their keys; an action or
// a flag that set one is refused here).
void checkFixedFields(const Scenario& s) {
    const char* field = s.tokens                           ? "tokens"
                        : s.dModel                         ? "d_model"
                        : s.heads                          ? "heads"
                        : s.dk                             ? "d_k"
                        : s.dv                             ? "d_v"
                        : s.x                              ? "X"
                        : (s.q || s.k || s.v)              ? "Q"
                        : s.keyTokens                      ? "key_tokens"
                        : s.mask                           ? "mask"
                        : s.length                         ? "length"
                        : s.tokenizer != Tokenizer::Word   ? "tokenizer"
                        : s.positional != Positional::None ? "positional"
                                                           : nullptr;
    if (field) throw InputError(field, "not with a model: the checkpoint fixes the tokens, sizes and weights");
}

}  // namespace

std::uint64_t everyMapBytes(const decoder::Config& c, long long t) {
    return 4ULL * static_cast<std::uint64_t>(c.nLayer) * static_cast<std::uint64_t>(c.nHead) * static_cast<std::uint64_t>(t) *
           static_cast<std::uint64_t>(t);
}

decoder::PassMaps passMapsFor(const decoder::Config& c, long long t, std::uint64_t keptMapsBytes) {
    return everyMapBytes(c, t) <= keptMapsBytes ? decoder::PassMaps::Kept : decoder::PassMaps::OnDemand;
}

decoder::PassMaps passMapsWithin(const decoder::Config& c, long long t, const Limits& limits) {
    decoder::PassMaps maps = passMapsFor(c, t, limits.keptMapsBytes);
    if (maps == decoder::PassMaps::Kept && modelMemoryBytes(c, t, maps) > limits.maxBytes) maps = decoder::PassMaps::OnDemand;
    // The shown layer whole is too large, or does not fit beside the pass: it is read from the
    // pass, and nothing reads the activations.
    if (maps == decoder::PassMaps::OnDemand &&
        (shownLayerMapBytes(c, t) > limits.shownLayerBytes || modelMemoryBytes(c, t, maps) > limits.maxBytes))
        maps = decoder::PassMaps::Lean;
    return maps;
}

std::uint64_t shownLayerMapBytes(const decoder::Config& c, long long t) {
    return 8ULL * static_cast<std::uint64_t>(c.nHead) * static_cast<std::uint64_t>(t) * static_cast<std::uint64_t>(t);
}

std::uint64_t keptModelBytes(const decoder::Config& c, long long t, decoder::PassMaps maps) { return decoder::storeBytes(c, t, 0, maps); }

std::uint64_t modelMemoryBytes(const decoder::Config& c, long long t, decoder::PassMaps maps, bool shownWhole) {
    const long long d = c.nEmbd, width = c.headWidth(), w = c.qkvWidth();
    // the layer's X and its packed tiles [T, d] (not from a Lean pass); W_Q, W_K, W_V [d, w] and
    // W_O [h·d_h, d], each packed once more, and their side-by-side copy [d, w]
    const long long x = maps == decoder::PassMaps::Lean ? 0 : 2 * t * d;
    const auto layer = static_cast<std::uint64_t>(4 * (x + 3 * d * w + 2LL * c.qWidth() * d));
    if (shownWhole) return keptModelBytes(c, t, maps) + layer + forwardBytes(t, t, c.nHead, d, width, width);
    // read from the pass: a block of rows a thread (at most 16 MiB, the sweep's) and a pooled map,
    // its means and maxima (at most 4096 x 4096 texels each, the screen's)
    const auto cells = static_cast<std::uint64_t>(t) * static_cast<std::uint64_t>(t);
    const std::uint64_t reading =
        std::min<std::uint64_t>(16ULL << 20, 4 * cells) * static_cast<std::uint64_t>(std::max(1, omp_get_max_threads())) +
        8 * std::min<std::uint64_t>(cells, 4096ULL * 4096ULL);
    return keptModelBytes(c, t, maps) + layer + reading;
}

std::vector<decoder::Intervention> interventions(const Scenario& scenario) {
    using Kind = decoder::Intervention::Kind;
    std::vector<decoder::Intervention> edits;
    for (const HeadAblation& a : scenario.ablations) edits.push_back({a.mean ? Kind::MeanHead : Kind::ZeroHead, a.layer, a.head, 0});
    for (const int token : scenario.hiddenTokens) edits.push_back({Kind::HideToken, 0, 0, token});
    return edits;
}

LoadedModel loadModel(const Scenario& scenario, const LoadedModel* previous, const Limits& limits, Progress* progress) {
    if (!scenario.model) return {};
    checkFixedFields(scenario);
    LoadedModel loaded;
    // The same folder reuses its checkpoint, unless the file changed since: then it is opened again.
    if (previous && previous->checkpoint && previous->checkpoint->folder() == *scenario.model && !previous->checkpoint->changed()) {
        loaded.checkpoint = previous->checkpoint;
        loaded.forwardPasses = previous->forwardPasses;
        loaded.appendedPasses = previous->appendedPasses;
        loaded.editedPasses = previous->editedPasses;
        loaded.editedLayers = previous->editedLayers;
    } else {
        loaded.checkpoint = openCheckpoint(*scenario.model, progress);
    }
    const decoder::Checkpoint& model = *loaded.checkpoint;
    if (scenario.layer >= model.config().nLayer)
        throw InputError(
            "layer", std::to_string(scenario.layer) + " is outside this model's layers 0 … " + std::to_string(model.config().nLayer - 1));
    const std::string sentence = scenario.sentence.value_or(kDefaultSentence);
    // A text longer than the longest tokens could fill every position is refused before the
    // tokenizer spends seconds on it.
    const std::size_t mostBytes = static_cast<std::size_t>(model.config().longestInput()) * model.tokenizer().longestTokenBytes();
    const std::size_t pairBytes = scenario.pair ? scenario.pair->size() : 0;
    if (sentence.size() + pairBytes > mostBytes)
        throw InputError(scenario.pair ? "pair" : "sentence", std::to_string(sentence.size() + pairBytes) +
                                                                  " bytes are more than this model's " +
                                                                  std::to_string(model.config().longestInput()) + " positions can hold");
    // A sentence pair (an encoder's: [CLS] A [SEP] B [SEP]) carries its token types.
    std::vector<int> ids, types;
    try {
        if (scenario.pair) {
            ModelTokenizer::Encoding e = model.tokenizer().encodePair(sentence, *scenario.pair, "");
            ids = std::move(e.ids);
            if (model.config().typeVocab > 1) types = std::move(e.typeIds);
        } else {
            ids = model.tokenizer().encode(sentence);
        }
    } catch (const InputError& e) {
        throw e.within(scenario.pair ? "pair" : "sentence");
    }
    // The tokens generated after the sentence, as they were chosen.
    if (!scenario.generated.empty()) {
        if (!model.config().causal) throw InputError("generated", "an encoder generates no tokens");
        ids.insert(ids.end(), scenario.generated.begin(), scenario.generated.end());
    }
    decoder::checkIds(model.config(), ids, !scenario.generated.empty() ? "generated" : scenario.pair ? "pair" : "sentence", types);
    // A scenario's limits (buildModel's), before the pass allocates its store.
    const auto tokens = static_cast<long long>(ids.size());
    if (tokens > limits.maxTokens)
        throw InputError("sentence", std::to_string(tokens) + " tokens (read by the model's tokenizer) are over the limit of " +
                                         std::to_string(limits.maxTokens) + " (--max-tokens)");
    // Every map kept while they are small enough and fit --max-memory; else made on demand from
    // q, k and each row's log-sum-exp.
    const decoder::PassMaps maps = passMapsWithin(model.config(), tokens, limits);
    // The shown layer's heads whole while they fit beside the pass; else read from it (Lean).
    loaded.shownWhole = maps != decoder::PassMaps::Lean;
    if (const std::uint64_t needed = modelMemoryBytes(model.config(), tokens, maps, loaded.shownWhole); needed > limits.maxBytes) {
        const std::string kept = maps == decoder::PassMaps::Kept
                                     ? "every layer's " + std::to_string(model.config().nHead) + " heads' " + std::to_string(tokens) +
                                           " x " + std::to_string(tokens) + " weights with the activations kept"
                                     : "every layer's queries, keys and values kept";
        throw InputError("sentence", std::to_string(tokens) + " tokens need about " + formatBytes(needed) + " (" + kept +
                                         ", each map made on demand), over the limit of " + formatBytes(limits.maxBytes) +
                                         " (--max-memory)");
    }
    // The edits are checked before any pass runs.
    const std::vector<decoder::Intervention> edits = interventions(scenario);
    std::vector<std::string> fields;
    for (const HeadAblation& a : scenario.ablations) {
        const auto n = std::count_if(scenario.ablations.data(), &a, [&](const HeadAblation& b) { return b.mean == a.mean; });
        fields.push_back((a.mean ? "ablate_mean[" : "ablate[") + std::to_string(n) + "]");
    }
    for (std::size_t n = 0; n < scenario.hiddenTokens.size(); ++n) fields.push_back("hide_tokens[" + std::to_string(n) + "]");
    decoder::checkInterventions(model.config(), static_cast<Eigen::Index>(ids.size()), edits, fields);
    // A previous pass is reused only when it keeps its maps as this one would.
    const bool sameModel = previous && previous->checkpoint == loaded.checkpoint && previous->base && previous->base->maps() == maps &&
                           previous->base->types == types;
    if (sameModel && previous->base->ids == ids) {
        loaded.base = previous->base;
    } else if (sameModel && decoder::commonPrefix(ids, previous->base->ids) > 0) {
        loaded.base = std::make_shared<const decoder::Run>(decoder::forwardAppend(model, ids, *previous->base));
        ++loaded.appendedPasses;
    } else {
        loaded.base = std::make_shared<const decoder::Run>(decoder::forward(model, ids, progress, maps, types));
        ++loaded.forwardPasses;
    }
    loaded.run = loaded.base;
    if (!edits.empty()) {
        // The same edits over the same pass: the previous edited pass itself.
        const bool sameBase = sameModel && previous->base == loaded.base && previous->run;
        if (sameBase && previous->run->edits == edits) {
            loaded.run = previous->run;
        } else {
            loaded.run = std::make_shared<const decoder::Run>(
                decoder::forwardEdited(model, *loaded.base, edits, sameBase ? previous->run.get() : nullptr, progress));
            if (loaded.run != loaded.base && loaded.run->computedFrom() < model.config().nLayer) {
                ++loaded.editedPasses;
                loaded.editedLayers += model.config().nLayer - loaded.run->computedFrom();
            }
        }
        loaded.nextChanges = decoder::nextTokenChanges(loaded.base->logits, loaded.run->logits, 10);
    }
    loaded.labels = decoder::tokenLabels(model, ids);
    loaded.generated = scenario.generated.size();
    loaded.next = decoder::topNext(loaded.run->logits, 1.0f, 10);
    for (const decoder::NextToken& n : loaded.next) loaded.nextLabels.push_back(decoder::tokenLabel(model, n.id));
    return loaded;
}

Model buildModel(const Scenario& scenario, const LoadedModel& loaded, bool applySwaps, const Limits& limits) {
    if (!loaded) return buildModel(scenario, applySwaps, limits);
    Model m = decoder::layerModel(*loaded.checkpoint, *loaded.run, scenario.layer, loaded.labels);
    if (applySwaps && !scenario.swaps.empty()) {
        m.perm = permutationFromSwaps(static_cast<int>(m.x.rows()), scenario.swaps, "swaps");
        m.x = permuteRows(m.x, m.perm);
        packRows(m.x, m.xTiles);
        m.queryTokens = permuteLabels(m.queryTokens, m.perm);
        m.keyTokens = m.queryTokens;
    }
    return m;
}

}  // namespace attnviz::core
