#!/bin/sh
# The repository of the git efficacy runs (docs/benchmarks.md, "Defaults that learn"): seven commits
# by three people on two branches, a change staged and one not; fixed dates, so the same hashes
# every time. bench/scenarios/heldout-git.jsonl holds questions about it, written by hand.
#   sh bench/scenarios/make_git_repo.sh DIR
set -e
dir=$1
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
commit() {  # commit AUTHOR EMAIL DAY MESSAGE
  GIT_AUTHOR_DATE="2024-03-0$3T10:00:00" GIT_COMMITTER_DATE="2024-03-0$3T10:00:00" \
    git -c user.name="$1" -c user.email="$2" commit -qm "$4"
}
git init -q -b main
printf '# weather-cli\nA small command-line weather tool.\n' > README.md
git add README.md && commit "Ann Lee" ann@example.com 1 "Initial commit"
printf 'def forecast(city):\n    return {"city": city, "temp": 21.456}\n' > forecast.py
git add forecast.py && commit "Bob Stone" bob@example.com 2 "Add forecast module"
printf '[defaults]\ncity = Lisbon\nunits = metric\n' > config.ini
printf '# TODO\n- add humidity\n' > TODO.md
git add config.ini TODO.md && commit "Ann Lee" ann@example.com 3 "Add config with default city"
printf 'def forecast(city):\n    return {"city": city, "temp": round(21.456, 1)}\n' > forecast.py
git add forecast.py && commit "Carla Diaz" carla@example.com 4 "Fix rounding in forecast"
printf '# weather-cli\nA small command-line weather tool.\n\n## Install\npip install weather-cli\n' > README.md
git add README.md && commit "Bob Stone" bob@example.com 5 "Document installation"
git checkout -qb feature/alerts
printf 'def alerts(city):\n    return ["storm"]\n' > alerts.py
git add alerts.py && commit "Carla Diaz" carla@example.com 6 "Add storm alerts"
git checkout -q main
printf '1.2.0\n' > VERSION
git add VERSION && commit "Ann Lee" ann@example.com 7 "Bump version to 1.2.0"
printf '## 1.2.0\n- storm alerts preview\n' > CHANGELOG.md
git add CHANGELOG.md
printf '# TODO\n- add humidity\n- support Fahrenheit\n' > TODO.md
