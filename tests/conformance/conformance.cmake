# Conformance folders (under ../shared/conformance) whose cases must pass on the omp
# backend and on the scalar reference. A plugin's engineer adds its folder here once
# every case in it passes (or is waived in waivers.txt with evidence).
set(KPLACE_CONFORMANCE_FOLDERS
  podtopologyspread
  tainttoleration
  nodeunschedulable
  nodename
  nodeports
  nodeaffinity
  imagelocality
  interpodaffinity
  noderesources
  seed
  volumerestrictions
  volumezone
  nodevolumelimits
  volumebinding
  preemption
)

set(KPLACE_CONFORMANCE_DIR ${CMAKE_SOURCE_DIR}/../shared/conformance)
set(KPLACE_CONFORMANCE_WAIVERS ${CMAKE_SOURCE_DIR}/tests/conformance/waivers.txt)

# kplace's own cases, in the same format: OpportunisticBatching sequences transcribed from
# upstream's batching tests and derived from its code (tests/conformance/batching/README.md), and the
# PodGroup cycle's queued cases (tests/conformance/podgroup/README.md).
foreach(folder IN ITEMS batching podgroup)
  add_test(NAME conformance.own.${folder}.omp
           COMMAND $<TARGET_FILE:kplace> conform ${CMAKE_SOURCE_DIR}/tests/conformance/${folder} --backend=omp)
  add_test(NAME conformance.own.${folder}.reference
           COMMAND $<TARGET_FILE:kplace> conform ${CMAKE_SOURCE_DIR}/tests/conformance/${folder} --reference)
  set_tests_properties(conformance.own.${folder}.omp conformance.own.${folder}.reference
                       PROPERTIES LABELS conformance TIMEOUT 300 ENVIRONMENT OMP_WAIT_POLICY=passive)
endforeach()

if(KPLACE_CONFORMANCE_FOLDERS AND NOT IS_DIRECTORY ${KPLACE_CONFORMANCE_DIR})
  message(WARNING "kplace: ${KPLACE_CONFORMANCE_DIR} not found; conformance tests not registered")
  return()
endif()

# Folders registered when shared/ has them (upstream's batching sequence cases ship later).
foreach(folder IN ITEMS batching)
  if(IS_DIRECTORY ${KPLACE_CONFORMANCE_DIR}/${folder})
    list(APPEND KPLACE_CONFORMANCE_FOLDERS ${folder})
  endif()
endforeach()

foreach(folder IN LISTS KPLACE_CONFORMANCE_FOLDERS)
  if(NOT IS_DIRECTORY ${KPLACE_CONFORMANCE_DIR}/${folder})
    message(FATAL_ERROR "kplace: KPLACE_CONFORMANCE_FOLDERS names ${folder}, "
                        "which is not a folder of ${KPLACE_CONFORMANCE_DIR}")
  endif()
  add_test(NAME conformance.${folder}.omp
           COMMAND $<TARGET_FILE:kplace> conform ${KPLACE_CONFORMANCE_DIR}/${folder}
                   --backend=omp --waivers ${KPLACE_CONFORMANCE_WAIVERS})
  add_test(NAME conformance.${folder}.reference
           COMMAND $<TARGET_FILE:kplace> conform ${KPLACE_CONFORMANCE_DIR}/${folder}
                   --reference --waivers ${KPLACE_CONFORMANCE_WAIVERS})
  set_tests_properties(conformance.${folder}.omp conformance.${folder}.reference
                       PROPERTIES LABELS conformance TIMEOUT 300 ENVIRONMENT OMP_WAIT_POLICY=passive)
endforeach()

