from django.apps import AppConfig


class RubricConfig(AppConfig):
    name = "rubric"
    verbose_name = "Rubric"
