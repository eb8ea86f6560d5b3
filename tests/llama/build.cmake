# Included into llama.cpp's CMake project by provision.sh (CMAKE_PROJECT_INCLUDE). The tests'
# model is tiny, so almost none of llama.cpp needs to be fast: everything is compiled at the
# -O0 of CMAKE_CXX_FLAGS_RELEASE, which takes a fraction of the time -O3 does, except what runs
# for every token over the whole 151k-token vocabulary (the tool-call grammar, the samplers,
# the vocabulary's pieces) and ggml's CPU kernels, which are optimised.
include_guard(GLOBAL)

function(tool_core_tune_llama_build)
    set_property(TARGET ggml-cpu APPEND PROPERTY COMPILE_OPTIONS -O2)
    set(src "${CMAKE_SOURCE_DIR}/src")
    set_property(
        SOURCE "${src}/llama-grammar.cpp" "${src}/llama-sampler.cpp" "${src}/llama-vocab.cpp"
            "${src}/unicode.cpp"
        DIRECTORY "${src}"
        APPEND PROPERTY COMPILE_OPTIONS -O2)
    set_property(
        SOURCE "${CMAKE_SOURCE_DIR}/common/sampling.cpp"
        DIRECTORY "${CMAKE_SOURCE_DIR}/common"
        APPEND PROPERTY COMPILE_OPTIONS -O2)
    # Many small files that include the same large headers, compiled a batch at a time: the
    # multimodal library's models (the server links it; the tests never use it) and the chat
    # parsers of model families other than Qwen's.
    tool_core_unity(mtmd "${CMAKE_SOURCE_DIR}/tools/mtmd" "/models/")
    tool_core_unity(llama-common "${CMAKE_SOURCE_DIR}/common" "/parsers/")
endfunction()

# Builds `target` (defined in `dir`) as a unity build of its sources whose path contains
# `part`; the others are compiled on their own.
function(tool_core_unity target dir part)
    get_property(sources TARGET ${target} PROPERTY SOURCES)
    foreach(source IN LISTS sources)
        cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${dir}")
        if(NOT source MATCHES "${part}")
            set_property(SOURCE "${source}" DIRECTORY "${dir}"
                PROPERTY SKIP_UNITY_BUILD_INCLUSION ON)
        endif()
    endforeach()
    set_property(TARGET ${target} PROPERTY UNITY_BUILD ON)
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL tool_core_tune_llama_build)
